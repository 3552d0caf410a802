import { accessSync } from "node:fs";

/** Marks a point in a traced child's system calls (test/helpers/syscalls.ts): an `access` of a name no one has. */
export function markTraced(point: "start" | "end"): void {
  try {
    accessSync(`/agent-tape-trace-${point}`);
  } catch {
    // the name never exists: only the call is wanted
  }
}
