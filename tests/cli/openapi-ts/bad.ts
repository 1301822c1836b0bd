/*
 * bad.ts - what the generated types must refuse (tests/cli/openapi-ts.sh expects
 * tsc to fail on each line marked below, so the types are not `any`).
 */
import type { components } from "./api";

type Schemas = components["schemas"];

export const noBatch: Schemas["PlanRequest"] = { cluster: "enva", model: "bert-huge" }; // error: batch
export const badSchedule: Schemas["PlanRequest"] = { cluster: 1, model: 2, batch: 8, schedule: "zigzag" }; // error
export const unknownMember: Schemas["PlanRequest"] = { cluster: 1, model: 2, batch: 8, bogus: true }; // error
export const badBandwidth: Schemas["GalvatronClusterImport"] = { nodes: 1, gpus_per_node: 8, allreduce: { x: "fast" } }; // error
