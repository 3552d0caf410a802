export { runBackendConformance, type BackendConformanceRun, type ConformanceAreaName } from "./backend-conformance.js";
export { runSessionConformance } from "./sessions.js";
export { runLogConformance } from "./log.js";
export { runBlobConformance } from "./blobs.js";
export { runRecordConformance } from "./records.js";
export { runLockConformance } from "./lock.js";
export { runRecoveryConformance } from "./recovery.js";
export { runRewindConformance } from "./rewind.js";
export type { BackendConformanceOptions, CrashLeftState, OptionalMethod } from "./suite.js";
