export { runBackendConformance } from "./backend-conformance.js";
export type { BackendConformanceOptions } from "./backend-conformance.js";
