// runBackendConformance's `areas`: only the named areas register tests. Checked by the test names this file
// collects: the filtered run must hold exactly what the two areas run on their own hold, nothing of the others.
import { describe, expect, it, type RunnerTask } from "vitest";
import { memoryBackend } from "../../src/backend/memory/memory-backend.js";
import { isAgentTapeError } from "../../src/index.js";
import {
  runBackendConformance,
  runLockConformance,
  runRecordConformance,
  type BackendConformanceRun,
  type ConformanceAreaName,
} from "../../src/testing/index.js";

const memory = {
  create: () => memoryBackend(),
  lacks: {
    writeBlobs: "a blob write is a step in memory",
    writeScanBlobs: "a blob held in memory costs its bytes",
    deleteBlobs: "a delete is a step in memory",
    archiveLogAfter: "a rewind keeps the events it cut in its record",
    readEventBatches: "its events are already in memory",
    discardPartialWrites: "a blob is stored in one synchronous step",
  },
  crashLeftStateAbsent: "nothing outlives a crash",
  crashedHolderAbsent: "its lock dies with its holder",
};

const FILTERED = "memory, lock and records only";
runBackendConformance({ ...memory, name: FILTERED, areas: ["lock", "records"] });
runRecordConformance({ ...memory, name: "memory, records area" });
runLockConformance({ ...memory, name: "memory, lock area" });

/** The names of the tests below the suite `storage backend conformance: <name>`, each with its describes. */
function testNames(file: RunnerTask, name: string): string[] {
  const top = "tasks" in file ? file.tasks.find((t) => t.name === `storage backend conformance: ${name}`) : undefined;
  if (!top) throw new Error(`no suite for ${name}`);
  const names: string[] = [];
  const walk = (task: RunnerTask, path: string[]) => {
    // A skipped test names its suite in the reason: the same test under either run reads the same.
    if (task.type === "test") names.push([...path, task.name].join(" > ").replaceAll(name, "<backend>"));
    else if ("tasks" in task) for (const child of task.tasks) walk(child, [...path, task.name]);
  };
  if ("tasks" in top) for (const child of top.tasks) walk(child, []);
  return names;
}

describe("runBackendConformance({ areas })", () => {
  it("registers the tests of the named areas, in the suite's order, and none of the other areas'", ({ task }) => {
    const filtered = testNames(task.file, FILTERED);
    const records = testNames(task.file, "memory, records area");
    const lock = testNames(task.file, "memory, lock area");
    expect(records.length).toBeGreaterThan(0);
    expect(lock.length).toBeGreaterThan(0);
    expect(filtered).toEqual([...records, ...lock]);
  });

  it.for([
    { areas: [] as ConformanceAreaName[], says: "areas is empty" },
    { areas: ["logs"] as unknown as ConformanceAreaName[], says: "no area named logs" },
  ])("refuses $areas with INVALID_ARGUMENT, naming the areas there are", ({ areas, says }) => {
    const run: BackendConformanceRun = { ...memory, name: "refused", areas };
    let thrown: unknown;
    try {
      runBackendConformance(run);
    } catch (error) {
      thrown = error;
    }
    expect(isAgentTapeError(thrown, "INVALID_ARGUMENT")).toBe(true);
    expect(thrown).toMatchObject({ message: expect.stringContaining(says) });
    expect(thrown).toMatchObject({ message: expect.stringContaining("sessions, log, blobs, records, lock, recovery") });
  });
});
