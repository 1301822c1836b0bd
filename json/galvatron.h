/*
 * galvatron.h - imports the profile files of Galvatron (PKU-DAIR/Hetu-Galvatron,
 * v2.4.0) as uniap documents: the hardware files become a cluster profile
 * (schema/cluster.schema.json), a model's computation + memory profiles and
 * its hyper-parameter file become a model profile (schema/model.schema.json).
 * docs/galvatron.md states every mapping rule and unit conversion.
 *
 * Every key of every input file is checked against the grammar of that file
 * and every number for type and range; a corrupt input gives an error whose
 * message starts with the file's path and names the key ("DIR/p2p_bandwidth_
 * 1nodes_8gpus_per_node.json: pp_size_3: must divide the 8 devices").  The
 * documents produced are checked with jdec_cluster_json()/jdec_model_json()
 * before they are returned, so they always decode.
 *
 * Result codes: UNIAP_E_IO (a file or folder cannot be read), UNIAP_E_MALFORMED
 * (bad JSON), UNIAP_E_INVALID (a key or value breaks the format), UNIAP_E_NOTFOUND
 * (no profile or file set matches), UNIAP_E_ARG (bad options, or a choice the
 * caller must make: several file sets, several matching profiles),
 * UNIAP_E_LIMIT (a size cap), UNIAP_E_NOMEM.
 *
 * Ownership: all inputs are borrowed.  On success *out is a new cJSON tree
 * owned by the caller (cJSON_Delete); on failure *out is NULL.
 *
 * Never: print, exit, or keep state between calls.
 */
#ifndef UNIAP_GALVATRON_H
#define UNIAP_GALVATRON_H

#include <stddef.h>

#include "err.h"

struct cJSON;

/* Largest input file read (bytes). */
#define GALV_MAX_FILE_BYTES ((size_t)16 << 20)
/* Bytes of the import summary (struct galv_report). */
#define GALV_REPORT_MAX 2048
/* Defaults of the device memory and reserved memory, in GiB (2^30 bytes). */
#define GALV_DEFAULT_MEMORY_GIB 80.0
#define GALV_DEFAULT_RESERVED_GIB 2.0

/* What the import chose (file set, profile entries, variants), for people;
 * lines end with '\n', cut at GALV_REPORT_MAX - 1 bytes. */
struct galv_report {
	char text[GALV_REPORT_MAX];
};

/* ------------------------------------------------------------ hardware */

/*
 * Where the hardware files are.  dir (may be NULL) holds Galvatron's
 * hardware_configs: allreduce_bandwidth_<N>nodes_<G>gpus_per_node.json and,
 * optional, p2p_bandwidth_<N>nodes_<G>gpus_per_node.json,
 * sp_time_<N>nodes_<G>gpus_per_node.json and overlap_coefficient.json.  An
 * explicit path overrides the file found in dir.  nodes/gpus_per_node pick the
 * file set (0: the only set in dir, or the numbers in the all-reduce file's
 * name).  memory_bytes/reserved_bytes are per device.
 */
struct galv_hw_opts {
	const char *dir;
	const char *allreduce_path;
	const char *p2p_path;
	const char *overlap_path;
	const char *sp_time_path;
	int nodes;
	int gpus_per_node;
	double memory_bytes;
	double reserved_bytes;
};

/* Reads the files of o (borrowed) and builds the cluster document in *out.
 * rep (may be NULL) receives a summary. */
uniap_code galv_import_cluster(const struct galv_hw_opts *o, struct cJSON **out, struct galv_report *rep,
                               struct uniap_err *err);

/*
 * The same from parsed files (all borrowed): each cJSON object with the name
 * its messages use (normally the path).  p2p, overlap and sp_time may be
 * NULL (no p2p entries; overlap coefficient 1; sp_time is only checked).
 */
struct galv_hw_input {
	int nodes;
	int gpus_per_node;
	double memory_bytes;
	double reserved_bytes;
	const struct cJSON *allreduce;
	const char *allreduce_name;
	const struct cJSON *p2p;
	const char *p2p_name;
	const struct cJSON *overlap;
	const char *overlap_name;
	const struct cJSON *sp_time;
	const char *sp_time_name;
};

uniap_code galv_cluster_json(const struct galv_hw_input *in, struct cJSON **out, struct galv_report *rep,
                             struct uniap_err *err);

/* --------------------------------------------------------------- model */

/*
 * Where the model files are.  config_path names the hyper-parameter file
 * (required).  dir holds computation_profiling_<prec>_<suffix>.json and
 * memory_profiling_<prec>_<suffix>.json pairs; the pair whose suffix matches
 * the config (hidden<H>_head<N>[_seqlen<S>], or a model name that prefixes the
 * config's file name) is used.  computation_path + memory_path (both or
 * neither) name the pair explicitly instead.  seq (0: from the config) is the
 * sequence length; bsz 0 fits each layer type's forward time alpha + beta * b
 * over every batch size profiled (one size: its per-sample time, no alpha),
 * bsz > 0 takes the per-sample times profiled at that batch size, no alpha;
 * sequence_parallel takes the "_sp" memory entries
 * (by default the plain ones when the file has them).
 */
struct galv_model_opts {
	const char *dir;
	const char *config_path;
	const char *computation_path;
	const char *memory_path;
	long seq;
	long bsz;
	int sequence_parallel;
};

/* Reads the files of o (borrowed) and builds the model document in *out.
 * rep (may be NULL) receives a summary. */
uniap_code galv_import_model(const struct galv_model_opts *o, struct cJSON **out, struct galv_report *rep,
                             struct uniap_err *err);

/*
 * The same from parsed files (all borrowed).  config_name is the config's
 * path: its file name without ".json" names the model.  precision is the
 * <prec> of the profile file names ("bf16", "fp16" or "fp32").
 */
struct galv_model_input {
	const struct cJSON *config;
	const char *config_name;
	const struct cJSON *computation;
	const char *computation_name;
	const struct cJSON *memory;
	const char *memory_name;
	const char *precision;
	long seq;
	long bsz;
	int sequence_parallel;
};

uniap_code galv_model_json(const struct galv_model_input *in, struct cJSON **out, struct galv_report *rep,
                           struct uniap_err *err);

/* ------------------------------------------------------------- helpers */

/* Reads path (borrowed) as one JSON object; on success the caller owns *out
 * (cJSON_Delete).  Messages start with path. */
uniap_code galv_load(const char *path, struct cJSON **out, struct uniap_err *err);

#endif
