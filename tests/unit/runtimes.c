/*
 * runtimes.c - test support: exports checked against the runtimes' facts
 * files (see runtimes.h).
 */
#include "runtimes.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RT_DIR "tests/data/runtimes/"
#define RT_MEGATRON RT_DIR "megatron-lm-core_v0.15.3.flags"
#define RT_DEEPSPEED RT_DIR "deepspeed-v0.19.5.keys"
#define RT_GALVATRON RT_DIR "galvatron-v2.4.0.keys"

/* One fact: a key, and what its value must be. */
struct rt_fact {
	char key[160];
	char kind;          /* ' ' any, 'i' integer, 'l' comma-separated integers, 'c' choices */
	char choices[256];  /* "|a|b|c|" */
};

struct rt_facts {
	struct rt_fact *items;
	size_t n;
};

static int rt_load(const char *path, struct rt_facts *out)
{
	FILE *f = fopen(path, "r");
	char line[512];

	out->items = NULL;
	out->n = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		struct rt_fact fact;
		char *p;
		size_t i;

		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0] || line[0] == '#')
			continue;
		memset(&fact, 0, sizeof(fact));
		fact.kind = ' ';
		if ((p = strchr(line, '=')) != NULL) {
			*p = '\0';
			fact.kind = 'c';
			snprintf(fact.choices, sizeof(fact.choices), "|%s|", p + 1);
		} else if ((p = strchr(line, ':')) != NULL) {
			*p = '\0';
			fact.kind = strcmp(p + 1, "list") == 0 ? 'l' : 'i';
		}
		snprintf(fact.key, sizeof(fact.key), "%.*s", (int)sizeof(fact.key) - 1, line);
		/* a later line with a value rule refines the bare key's */
		for (i = 0; i < out->n && strcmp(out->items[i].key, fact.key) != 0; i++)
			;
		if (i < out->n) {
			if (fact.kind != ' ')
				out->items[i] = fact;
			continue;
		}
		{
			struct rt_fact *g = realloc(out->items, (out->n + 1) * sizeof(*g));

			if (!g) {
				fclose(f);
				return -1;
			}
			out->items = g;
			out->items[out->n++] = fact;
		}
	}
	fclose(f);
	return 0;
}

static const struct rt_fact *rt_find(const struct rt_facts *fs, const char *key)
{
	size_t i;

	for (i = 0; i < fs->n; i++)
		if (strcmp(fs->items[i].key, key) == 0)
			return &fs->items[i];
	return NULL;
}

static int rt_is_int(const char *s)
{
	if (*s == '-')
		s++;
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* value (text) against fact; 0 ok */
static int rt_value_ok(const struct rt_fact *fact, const char *value)
{
	char needle[160];

	switch (fact->kind) {
	case 'i':
		return rt_is_int(value) ? 0 : -1;
	case 'c':
		snprintf(needle, sizeof(needle), "|%s|", value);
		return strstr(fact->choices, needle) ? 0 : -1;
	case 'l': {
		char buf[4096], *tok, *save = NULL;

		snprintf(buf, sizeof(buf), "%s", value);
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
			if (!rt_is_int(tok))
				return -1;
		return 0;
	}
	default:
		return 0;
	}
}

static int rt_megatron(const struct rt_facts *fs, const char *body, char *why, size_t n)
{
	const char *p = body;

	while (*p) {
		const char *end = strchr(p, '\n');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char line[512], *value;
		const struct rt_fact *fact;

		snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) - 1 ? len : sizeof(line) - 1), p);
		p += len + (end ? 1 : 0);
		if (!line[0] || line[0] == '#')
			continue;
		value = strchr(line, ' ');
		if (value)
			*value++ = '\0';
		if (!(fact = rt_find(fs, line))) {
			snprintf(why, n, "megatron-lm has no flag %s", line);
			return -1;
		}
		if (fact->kind != ' ' && (!value || rt_value_ok(fact, value) != 0)) {
			snprintf(why, n, "megatron-lm's %s does not take \"%s\"", line, value ? value : "");
			return -1;
		}
	}
	return 0;
}

static int rt_json(const struct rt_facts *fs, const char *runtime, const cJSON *o, const char *prefix,
                   char *why, size_t n)
{
	const cJSON *v;

	for (v = o->child; v; v = v->next) {
		char key[160], value[4096];
		const struct rt_fact *fact;

		snprintf(key, sizeof(key), "%s%s%s", prefix, prefix[0] ? "." : "", v->string ? v->string : "?");
		if (cJSON_IsObject(v)) {
			if (rt_json(fs, runtime, v, key, why, n) != 0)
				return -1;
			continue;
		}
		if (!(fact = rt_find(fs, key))) {
			snprintf(why, n, "%s reads no key %s", runtime, key);
			return -1;
		}
		if (cJSON_IsString(v))
			snprintf(value, sizeof(value), "%s", v->valuestring);
		else if (cJSON_IsNumber(v))
			snprintf(value, sizeof(value), "%.17g", v->valuedouble);
		else if (cJSON_IsBool(v))
			snprintf(value, sizeof(value), "%s", cJSON_IsTrue(v) ? "true" : "false");
		else
			snprintf(value, sizeof(value), "?");
		if (rt_value_ok(fact, value) != 0) {
			snprintf(why, n, "%s's %s does not take \"%.64s\"", runtime, key, value);
			return -1;
		}
	}
	return 0;
}

int runtime_check_export(enum exp_format f, const char *body, char *why, size_t n)
{
	const char *path = f == EXP_MEGATRON ? RT_MEGATRON : f == EXP_DEEPSPEED ? RT_DEEPSPEED : RT_GALVATRON;
	struct rt_facts fs;
	int rc;

	if (f != EXP_MEGATRON && f != EXP_DEEPSPEED && f != EXP_GALVATRON)
		return 0;
	if (rt_load(path, &fs) != 0) {
		snprintf(why, n, "%s: cannot read", path);
		return -1;
	}
	if (f == EXP_MEGATRON) {
		rc = rt_megatron(&fs, body, why, n);
	} else {
		cJSON *j = cJSON_Parse(body);

		if (!j || !cJSON_IsObject(j)) {
			snprintf(why, n, "not a JSON object");
			rc = -1;
		} else {
			rc = rt_json(&fs, f == EXP_DEEPSPEED ? "deepspeed" : "galvatron", j, "", why, n);
		}
		cJSON_Delete(j);
	}
	free(fs.items);
	return rc;
}
