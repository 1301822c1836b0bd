/*
 * client.ts - a small uniapd client typed only by the types openapi-typescript
 * generates from GET /v1/openapi.json (./api.d.ts, made by tests/cli/openapi-ts.sh):
 * it creates a plan job, polls it to the end and exports its plan, then
 * checks a 404 problem.  Compiled with tsc --strict; run with node (its fetch)
 * as `node client.js BASE_URL`.  Prints one "ok ..." line per check, and
 * "fail ..." with exit status 1 at the first one that does not hold.
 *
 * The typed values below the requests (import bodies, a job's request) are
 * there for the compiler: they break the build when the document describes
 * a member a client may leave out as required, or a body as an object with
 * no members (Record<string, never>).
 */
import type { components, paths } from "./api";

declare const process: { argv: string[]; exit(code: number): never };

type Schemas = components["schemas"];
type PlanRequest = paths["/v1/plans"]["post"]["requestBody"]["content"]["application/json"];
type Job = paths["/v1/jobs/{id}"]["get"]["responses"]["200"]["content"]["application/json"];
// the job's 200 is JSON only (its event stream is an operation of its own), so a client that takes
// the operation's content whole gets Job, not Job | string: this line does not compile otherwise
type JobContent = paths["/v1/jobs/{id}"]["get"]["responses"]["200"]["content"];
export const jobIsJsonOnly: [keyof JobContent] extends ["application/json"] ? true : false = true;
type ExportQuery = NonNullable<paths["/v1/jobs/{id}/plan"]["get"]["parameters"]["query"]>;
type ExportedJson = paths["/v1/jobs/{id}/plan"]["get"]["responses"]["200"]["content"]["application/json"];
type Problem = Schemas["Problem"];

const base: string = process.argv[2] ?? "http://127.0.0.1:8080";
const terminal: ReadonlyArray<Job["state"]> = ["succeeded", "failed", "canceled"];

function fail(what: string): never {
	console.log(`fail ${what}`);
	process.exit(1);
}

function check(cond: boolean, what: string): void {
	if (!cond)
		fail(what);
	console.log(`ok ${what}`);
}

async function call(method: string, path: string, body?: unknown): Promise<Response> {
	const init: RequestInit = { method, headers: { Accept: "application/json" } };
	if (body !== undefined) {
		init.headers = { "Content-Type": "application/json", Accept: "application/json" };
		init.body = JSON.stringify(body);
	}
	return fetch(base + path, init);
}

async function createPlan(req: PlanRequest): Promise<Job> {
	const res = await call("POST", "/v1/plans", req);
	if (res.status !== 202)
		fail(`POST /v1/plans: status ${res.status}: ${await res.text()}`);
	return (await res.json()) as Job;
}

async function getJob(id: number): Promise<Job> {
	const res = await call("GET", `/v1/jobs/${id}`);
	if (res.status !== 200)
		fail(`GET /v1/jobs/${id}: status ${res.status}`);
	return (await res.json()) as Job;
}

async function exportPlan(id: number, format: NonNullable<ExportQuery["format"]>): Promise<Response> {
	return call("GET", `/v1/jobs/${id}/plan?format=${format}`);
}

function sleep(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms));
}

async function main(): Promise<void> {
	/* only the members without a default: the others are optional */
	const req: PlanRequest = { cluster: "enva", model: "bert-huge", batch: 8 };
	let job = await createPlan(req);
	check(job.id >= 1 && typeof job.links.self === "string", `created job ${job.id} (${job.state})`);
	const echoed: Job["request"] = job.request;
	/* a job's request and result are a plan's or a calibration's: "in" tells them apart */
	check(job.kind === "plan" && echoed !== undefined && "batch" in echoed && echoed.batch === 8 &&
	      echoed.cluster === "enva", "the job echoes its request");

	const deadline = Date.now() + 120000;
	while (!terminal.includes(job.state)) {
		if (Date.now() > deadline)
			fail(`job ${job.id} still ${job.state} after 120 s`);
		await sleep(200);
		job = await getJob(job.id);
	}
	check(job.state === "succeeded", `job ${job.id} ${job.state}${job.error ? ": " + job.error : ""}`);
	const any: Job["result"] = job.result;
	const result: Schemas["PlanResult"] | undefined = any !== undefined && "candidates" in any ? any : undefined;
	check(result !== undefined && result.plan !== null && result.candidates.length > 0,
	      `result: ${result?.candidates.length} candidates, optimal ${result?.optimal}`);
	const done = job.progress.candidates_done ?? 0;
	check(done > 0 && done === job.progress.candidates_total, `progress ${done}/${job.progress.candidates_total}`);

	const asJson = await exportPlan(job.id, "json");
	check(asJson.status === 200, `export json: status ${asJson.status}`);
	const plan: ExportedJson = (await asJson.json()) as ExportedJson;
	check(Object.keys(plan).length > 0, `export json: ${Object.keys(plan).join(", ")}`);
	const asText = await exportPlan(job.id, "text");
	const text = await asText.text();
	check(asText.status === 200 && text.length > 0, `export text: ${text.split("\n")[0]}`);

	const missing = await call("GET", "/v1/jobs/999999");
	const problem = (await missing.json()) as Problem;
	check(missing.status === 404 && problem.status === 404 && problem.type.startsWith("urn:uniap:problem:"),
	      `missing job: ${problem.type}`);
}

/* Import bodies and a request echo as a client writes them: type checks only. */
export const typed: {
	cluster: Schemas["GalvatronClusterImport"];
	model: Schemas["GalvatronModelImport"];
	nccl: Schemas["NcclTestsImport"];
	request: Schemas["JobRequest"];
} = {
	cluster: {
		nodes: 1,
		gpus_per_node: 8,
		allreduce: { allreduce_size_8_consec_1: 150.5, allreduce_size_4_consec_0: 120 },
		p2p: { pp_size_2: 140 },
		overlap: { overlap_coe: 1.1 },
	},
	model: {
		config: { hidden_size: 1024, num_hidden_layers: 24, vocab_size: 30522, architectures: ["BertForMaskedLM"] },
		computation: { layertype_0_bsz8: 1.5, layertype_other_bsz8: 0.4 },
		memory: {
			layertype_0: { "512": { parameter_size: 48, tp_activation_per_bsz_dict: { "1": 100, checkpoint: 10 } } },
			other_memory_pp_on_first: { "512": { model_states: { "1": 500 }, activation: 20 } },
		},
	},
	nccl: { base: "enva", outputs: ["# nccl-tests output", { kind: "all_reduce", text: "..." }] },
	request: { cluster: 3, model: "inline", batch: 16, space: "uniform" },
};

main().catch((e: unknown) => fail(`exception: ${e instanceof Error ? e.message : String(e)}`));
