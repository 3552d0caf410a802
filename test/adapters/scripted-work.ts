// The work both scripted adapter agents do, whatever the framework: four model turns and three real tools on a
// workspace (a file write, a file edit, a shell command). Each framework's agent (ai-sdk-agent.ts,
// openai-agents-agent.ts) only wraps these in its own model and tool shapes.
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

export interface ScriptedCall {
  id: string;
  tool: "write_file" | "edit_file" | "bash";
  input: Record<string, string>;
}
export interface ScriptedTurn {
  text: string;
  calls: ScriptedCall[];
}

/** Four turns: write, then edit + a shell command, then another shell command, then the answer. */
export const SCRIPT: ScriptedTurn[] = [
  {
    text: "Writing the notes.",
    calls: [{ id: "t1", tool: "write_file", input: { path: "notes.md", text: "# Notes\n" } }],
  },
  {
    text: "Editing, and generating the index.",
    calls: [
      { id: "t2", tool: "edit_file", input: { path: "notes.md", find: "# Notes", replace: "# Final notes" } },
      { id: "t3", tool: "bash", input: { command: "mkdir -p gen && ls > gen/index.txt && rm todo.txt" } },
    ],
  },
  { text: "Stamping.", calls: [{ id: "t4", tool: "bash", input: { command: "echo stamped >> notes.md" } }] },
  { text: "Done.", calls: [] },
];

/**
 * What the three tools do on `workspace`, returning the text a model sees; `onCall` runs first, given the
 * call's id (the tests use it to stop, kill or look at the tape at a given call).
 */
export function workOn(workspace: string, onCall: (id: string) => Promise<void> | void) {
  return {
    writeFile: async ({ path, text }: { path: string; text: string }, id: string) => {
      await onCall(id);
      await writeFile(join(workspace, path), text);
      return `wrote ${path}`;
    },
    editFile: async ({ path, find, replace }: { path: string; find: string; replace: string }, id: string) => {
      await onCall(id);
      const before = await readFile(join(workspace, path), "utf8");
      await writeFile(join(workspace, path), before.replace(find, replace));
      return `edited ${path}`;
    },
    bash: async ({ command }: { command: string }, id: string) => {
      await onCall(id);
      return (await run("sh", ["-c", command], { cwd: workspace })).stdout;
    },
  };
}

/** What each tool touches, for the tape's tool wrapper. */
export const TOUCHES = {
  write_file: (input: { path: string }) => [input.path],
  edit_file: (input: { path: string }) => [input.path],
  bash: "shell",
} as const;
