import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";

/** What the loop passes with every call; the same names the Vercel AI SDK uses, so one wrapper fits both. */
export interface ToolCallContext {
  toolCallId: string;
  abortSignal?: AbortSignal;
}

/** A tool the agent can call. */
export interface Tool<Input = any> {
  description: string;
  /** The workspace paths a call may change. Tools that only read leave it out: they need no checkpoint. */
  touches?: (input: Input) => string[];
  execute: (input: Input, call: ToolCallContext) => Promise<string>;
}

/** Five file tools confined to `workspace`. Each returns a short text for the model, or throws. */
export function fileTools(workspace: string): Record<string, Tool> {
  const at = (path: string) => insideWorkspace(workspace, path);
  return {
    read_file: {
      description: "Read a text file.",
      execute: async ({ path }: { path: string }) => readFile(at(path), "utf8"),
    } satisfies Tool<{ path: string }>,

    write_file: {
      description: "Create or overwrite a text file (parent folders are created).",
      touches: ({ path }) => [path],
      execute: async ({ path, content }: { path: string; content: string }) => {
        await mkdir(dirname(at(path)), { recursive: true });
        await writeFile(at(path), content);
        return `wrote ${Buffer.byteLength(content)} bytes to ${path}`;
      },
    } satisfies Tool<{ path: string; content: string }>,

    edit_file: {
      description: "Replace the one occurrence of `find` in a file with `replace`.",
      touches: ({ path }) => [path],
      execute: async ({ path, find, replace }: { path: string; find: string; replace: string }) => {
        const text = await readFile(at(path), "utf8");
        const first = text.indexOf(find);
        if (first < 0) throw new Error(`"${find}" does not occur in ${path}`);
        // An edit the model aimed at one place must not silently land in several.
        if (text.indexOf(find, first + 1) >= 0) throw new Error(`"${find}" occurs more than once in ${path}`);
        await writeFile(at(path), text.slice(0, first) + replace + text.slice(first + find.length));
        return `edited ${path}`;
      },
    } satisfies Tool<{ path: string; find: string; replace: string }>,

    delete_file: {
      description: "Delete a file.",
      touches: ({ path }) => [path],
      execute: async ({ path }: { path: string }) => {
        if (!(await stat(at(path))).isFile()) throw new Error(`${path} is not a file`);
        await rm(at(path));
        return `deleted ${path}`;
      },
    } satisfies Tool<{ path: string }>,

    make_dir: {
      description: "Create a folder (and its parents).",
      touches: ({ path }) => [path],
      execute: async ({ path }: { path: string }) => {
        await mkdir(at(path), { recursive: true });
        return `created ${path}/`;
      },
    } satisfies Tool<{ path: string }>,
  };
}

/** The absolute path of `path`, refusing anything that would land outside the workspace. */
function insideWorkspace(workspace: string, path: string): string {
  const full = resolve(workspace, path);
  const rel = relative(workspace, full);
  if (rel === "" || rel.split(sep)[0] === ".." || isAbsolute(rel)) throw new Error(`${path} is outside the workspace`);
  return full;
}
