import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { readFileSync, statSync } from "node:fs";
import { isAbsolute, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, inject } from "vitest";
import { BUNDLE_INDEX, type BundleIndex, digest } from "./child-bundle-index.js";

// The one way the tests run a separate process: a script from test/children/ or examples/, bundled once per run
// by test/setup/child-bundles.ts, run with plain node from the repository's root (docs/testing.md, "Child
// processes").

const repository = fileURLToPath(new URL("../..", import.meta.url));

/** Absolute path of a child script: a name in test/children/, or already absolute (an example, say). */
export function childScript(script: string): string {
  return isAbsolute(script) ? script : fileURLToPath(new URL(`../children/${script}`, import.meta.url));
}

let index: { folder: string; read: BundleIndex } | undefined;

/**
 * The bundle that runs `script`, checked: it fails loudly, never runs an older build, when the project has no
 * bundles, the script has none, or one of the files it was built from changed since.
 */
export function childBundle(script: string): string {
  const folder = inject("childBundles");
  if (!folder) {
    throw new Error(
      "No child bundles in this run: add test/setup/child-bundles.ts to this project's globalSetup (vitest.config.ts)",
    );
  }
  if (index?.folder !== folder) {
    index = { folder, read: JSON.parse(readFileSync(join(folder, BUNDLE_INDEX), "utf8")) as BundleIndex };
  }
  const name = relative(repository, childScript(script)).replace(/\.ts$/, ".mjs");
  const inputs = index.read.inputs[name];
  if (!inputs) throw new Error(`No child bundle for ${script}: only test/children/ and examples/ are bundled`);
  for (const input of inputs) {
    const touched = statSync(join(repository, input)).mtimeMs > index.read.builtAtMs;
    if (touched && digest(input) !== index.read.digests[input]) {
      throw new Error(`${input} changed after the child bundles were built (${folder}): run the tests again`);
    }
  }
  return join(folder, name);
}

/** The command line that runs a child script: node, then its arguments. */
export function childCommand(script: string, args: readonly string[] = [], preloads: readonly string[] = []) {
  return [process.execPath, ...preloads.flatMap((p) => ["--import", childBundle(p)]), childBundle(script), ...args];
}

export interface ChildRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Limits the child runs under. */
export interface ChildLimits {
  /** Largest file the child may write, in KiB (`ulimit -f`): a write past it fails with EFBIG. */
  fileSizeKiB?: number;
  /** What a write past `fileSizeKiB` does: fail with EFBIG, as on a full disk, or kill the child. @default "die" */
  pastFileSize?: "fail" | "die";
  /** How many descriptors the child may have open (`ulimit -n`, soft and hard): past them an open fails EMFILE. */
  descriptors?: number;
  /**
   * Runs the child in namespaces of its own (needs root, as CI is): a network with only the loopback, so nothing
   * it starts reaches another machine, and a PID namespace, so a SIGKILL from `kill()` takes down every process it
   * started too, as a machine's crash would (`unshare --kill-child`: the namespace's first process dies with it).
   */
  isolated?: boolean;
}

/** A child script run from its bundle, its output collected as it comes. */
export class Child {
  readonly process: ChildProcess;
  stdout = "";
  stderr = "";
  private readonly exited: Promise<ChildRun>;
  private readonly lineWaiters: { match: (line: string) => boolean; resolve: (line: string) => void }[] = [];

  constructor(script: string, args: readonly string[], env: Record<string, string> = {}, limits: ChildLimits = {}) {
    // A file-size limit is set by the shell (`ulimit -f`, in KiB) and kept across exec. A write past it sends
    // SIGXFSZ, which kills the child mid-write ("die"), unless a listener is preloaded: then it fails EFBIG.
    // A descriptor limit (`ulimit -n`) is set the same way.
    const preload = limits.pastFileSize === "fail" ? ["preload/file-size-limit-fails-writes.ts"] : [];
    const node = childCommand(script, args, preload);
    const isolation = ["unshare", "--net", "--pid", "--fork", "--kill-child=SIGKILL", "/bin/sh", "-c"];
    const ulimits = [
      ...(limits.fileSizeKiB === undefined ? [] : [`ulimit -f ${limits.fileSizeKiB}`]),
      ...(limits.descriptors === undefined ? [] : [`ulimit -n ${limits.descriptors}`]),
    ];
    const [command, ...argv] = limits.isolated
      ? [...isolation, 'PATH="$PATH:/usr/sbin:/sbin" ip link set lo up && exec "$0" "$@"', ...node]
      : ulimits.length === 0
        ? node
        : ["/bin/sh", "-c", `${ulimits.join(" && ")} && exec "$0" "$@"`, ...node];
    this.process = spawn(command!, argv, {
      cwd: repository,
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...process.env, ...env },
    });
    let partial = "";
    this.process.stdout!.setEncoding("utf8").on("data", (text: string) => {
      this.stdout += text;
      partial += text;
      const lines = partial.split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        for (const waiter of this.lineWaiters.splice(0)) {
          if (waiter.match(line)) waiter.resolve(line);
          else this.lineWaiters.push(waiter);
        }
      }
    });
    this.process.stderr!.setEncoding("utf8").on("data", (text: string) => (this.stderr += text));
    // 'close' (not 'exit') so every byte the child wrote before it died has been read.
    this.exited = once(this.process, "close").then(([code, signal]) => ({
      code: code as number | null,
      signal: signal as NodeJS.Signals | null,
      stdout: this.stdout,
      stderr: this.stderr,
    }));
  }

  /** The lines the child has printed so far, each complete (a line still missing its newline is left out). */
  get lines(): string[] {
    return this.stdout.split("\n").slice(0, -1);
  }

  /** Resolves with the first line of stdout (from now on) that `match` accepts; rejects if the child ends first. */
  waitForLine(match: (line: string) => boolean): Promise<string> {
    return new Promise((resolve, reject) => {
      this.lineWaiters.push({ match, resolve });
      this.exited.then((run) =>
        reject(
          new Error(`child ended (code ${run.code}, signal ${run.signal}) before the line; stderr:\n${run.stderr}`),
        ),
      );
    });
  }

  /** Closes the child's stdin: the children that hold something let go when it ends. */
  endInput(): void {
    this.process.stdin!.end();
  }

  kill(signal: NodeJS.Signals = "SIGKILL"): void {
    this.process.kill(signal);
  }

  done(): Promise<ChildRun> {
    return this.exited;
  }
}

/** Runs a child script to its end. */
export function runChild(
  script: string,
  args: readonly string[],
  env?: Record<string, string>,
  limits?: ChildLimits,
): Promise<ChildRun> {
  const child = new Child(script, args, env, limits);
  child.endInput();
  return child.done();
}

/**
 * The children a test file spawns: push each one, and after every test the survivors are killed
 * and awaited. Call it after registering the temp-folder cleanup: vitest runs afterEach hooks in
 * reverse order, so the children are gone before their folders are removed.
 */
export function childrenKilledAfterEach(): Child[] {
  const children: Child[] = [];
  afterEach(async () => {
    for (const child of children.splice(0)) {
      child.kill();
      await child.done();
    }
  });
  return children;
}
