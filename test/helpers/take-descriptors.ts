import { closeSync, openSync } from "node:fs";

// For child processes that run out of descriptors for real (test/children/*-few-descriptors.ts).

/** Opens /dev/null until the process has no descriptor left, then closes `free` of them: the rest, still open. */
export function takeAllBut(free: number): number[] {
  const taken: number[] = [];
  for (;;) {
    try {
      taken.push(openSync("/dev/null", "r"));
    } catch {
      break;
    }
  }
  for (const fd of taken.splice(0, free)) closeSync(fd);
  return taken;
}
