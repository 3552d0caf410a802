import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { StorageBackend } from "../../src/backend/types.js";
import type { StoredEvent } from "../../src/core/events.js";

/** Temp folders made by a test file; `removeAll` (in afterEach) deletes them. */
export class TempRoots {
  private readonly made: string[] = [];

  async make(): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), "agent-tape-backend-"));
    this.made.push(dir);
    return dir;
  }

  async removeAll(): Promise<void> {
    await Promise.all(this.made.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
  }
}

export function event(sessionId: string, sequence: number, content = `event ${sequence}`): StoredEvent {
  return {
    v: 1,
    id: `${sessionId}-${sequence}`,
    sessionId,
    sequence,
    type: "message",
    createdAt: new Date(Date.UTC(2025, 0, 1, 0, 0, sequence)).toISOString(),
    payload: { role: "user", content },
  };
}

export function events(sessionId: string, count: number, content?: (n: number) => string): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => event(sessionId, i + 1, content?.(i + 1)));
}

export async function readAll(
  backend: StorageBackend,
  id: string,
  options: Parameters<StorageBackend["readEvents"]>[1] = {},
): Promise<StoredEvent[]> {
  const out: StoredEvent[] = [];
  for await (const e of backend.readEvents(id, options)) out.push(e);
  return out;
}

/** A child process running one of ./fixtures with tsx; its stdout is collected line by line. */
export class FixtureProcess {
  readonly child: ChildProcess;
  readonly lines: string[] = [];
  stderr = "";
  private ended = false;
  private readonly closed: Promise<void>;
  private waiters: (() => void)[] = [];

  constructor(fixture: string, args: readonly string[]) {
    const script = fileURLToPath(new URL(`./fixtures/${fixture}`, import.meta.url));
    this.child = spawn(process.execPath, ["--import", "tsx", script, ...args], {
      cwd: fileURLToPath(new URL("../..", import.meta.url)),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let partial = "";
    this.child.stdout!.setEncoding("utf8").on("data", (text: string) => {
      const parts = (partial + text).split("\n");
      partial = parts.pop() ?? "";
      this.lines.push(...parts);
      this.wakeAll();
    });
    this.child.stderr!.setEncoding("utf8").on("data", (text: string) => (this.stderr += text));
    this.child.on("error", (error) => (this.stderr += String(error)));
    // 'close', not 'exit': every line the child wrote before it died has been read by then.
    this.closed = new Promise((resolve) =>
      this.child.on("close", () => {
        this.ended = true;
        this.wakeAll();
        resolve();
      }),
    );
  }

  /** Resolves once the child has printed `count` lines; rejects if it ends first. */
  async waitForLines(count: number): Promise<void> {
    while (this.lines.length < count) {
      if (this.ended) throw new Error(`fixture ended before printing ${count} lines; stderr:\n${this.stderr}`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private wakeAll(): void {
    for (const wake of this.waiters.splice(0)) wake();
  }

  async kill(): Promise<void> {
    if (!this.ended) this.child.kill("SIGKILL");
    await this.closed;
  }
}
