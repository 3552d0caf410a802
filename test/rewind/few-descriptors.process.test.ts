import { spawn } from "node:child_process";
import { once } from "node:events";
import { describe, expect, it } from "vitest";
import { childCommand } from "../helpers/children.js";
import { tempDir } from "../helpers/fixture.js";

// A process allowed few descriptors (`prlimit`: 200, soft and hard) rewinds 300 files, each in a folder of its own.
// One operation keeps the folders it opens, up to a share of the descriptor limit (src/checkpoint/folder-budget.ts);
// a share fixed at 256 whatever the limit took every descriptor: the plan could then read none of the files, and
// the rewind was refused, each path "cannot be compared now (unreadable)", with nothing wrong in the workspace.

async function rewindWithDescriptors(limit: number, files: number): Promise<{ code: number; out: string }> {
  const dir = await tempDir("agent-tape-few-descriptors-");
  const [node, ...args] = childCommand("rewind-traced.ts", [dir, String(files), "1"]);
  const child = spawn("prlimit", [`--nofile=${limit}:${limit}`, "--", node!, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => (out += text));
  child.stderr.setEncoding("utf8").on("data", (text: string) => (out += text));
  const [code] = (await once(child, "close")) as [number];
  return { code, out };
}

describe("a process with few descriptors", () => {
  it("rewinds 300 files in 300 folders with 200 descriptors: every file restored", async () => {
    const { code, out } = await rewindWithDescriptors(200, 300);
    expect(code, out.slice(0, 2000)).toBe(0);
    expect(JSON.parse(out.trim())).toEqual({ filesRestored: 300, intact: true });
  }, 120_000);
});
