import { beforeEach } from "vitest";
import type { StorageBackend } from "../backend/types.js";
import { runAreas, type BackendConformanceOptions, type ConformanceArea } from "./suite.js";

/** What a crash leaves behind, and what the next holder makes of it. */
export const recoveryArea: ConformanceArea = (suite) => {
  let _backend!: StorageBackend;
  beforeEach(() => {
    _backend = suite.backend;
  });
};

/** Registers (with vitest) the recovery area alone; `runBackendConformance` runs every area. */
export function runRecoveryConformance(options: BackendConformanceOptions): void {
  runAreas(options, [recoveryArea]);
}
