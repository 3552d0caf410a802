import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import type { Readable, Writable } from "node:stream";

// Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe: commands on
// the child's fd 3, replies and events on its fd 4, each a JSON message ending in a NUL byte). No
// WebSocket and no npm browser package: Debian's `chromium`, which test/setup/chromium.ts installs when missing.

/** The browser binary on PATH, if any. */
export function findChromium(): string | undefined {
  for (const name of ["chromium", "chromium-browser", "google-chrome"]) {
    const found = spawnSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" });
    if (found.status === 0 && found.stdout.trim() !== "") return found.stdout.trim();
  }
  return undefined;
}

/** The browser binary, or an error saying how to get it: a missing browser fails the test, never skips it. */
export function chromiumBinary(): string {
  const found = findChromium();
  if (found) return found;
  throw new Error(
    "No Chromium found: install it (Debian: apt-get install -y chromium); the process tier's setup does.",
  );
}

interface Message {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: Record<string, unknown>;
  error?: { message: string };
  sessionId?: string;
}

export class Browser {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: any) => void; reject: (e: Error) => void }>();
  private readonly listeners: ((message: Message) => void)[] = [];
  private readonly input: Writable;
  readonly stderr: string[] = [];

  private constructor(private readonly child: ChildProcess) {
    this.input = child.stdio[3] as Writable;
    const output = child.stdio[4] as Readable;
    let buffered = "";
    output.setEncoding("utf8").on("data", (chunk: string) => {
      buffered += chunk;
      for (let end = buffered.indexOf("\0"); end !== -1; end = buffered.indexOf("\0")) {
        const message = JSON.parse(buffered.slice(0, end)) as Message;
        buffered = buffered.slice(end + 1);
        this.dispatch(message);
      }
    });
    child.stderr!.setEncoding("utf8").on("data", (text: string) => this.stderr.push(text));
    child.on("exit", (code, signal) => {
      for (const { reject } of this.pending.values())
        reject(new Error(`chromium exited (${code ?? signal}): ${this.stderr.join("").slice(-2000)}`));
      this.pending.clear();
    });
  }

  static async launch(userDataDir: string): Promise<Browser> {
    const child = spawn(
      chromiumBinary(),
      [
        "--headless",
        "--no-sandbox", // CI runs as root, where Chromium's sandbox refuses to start
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-background-networking",
        "--remote-debugging-pipe",
        `--user-data-dir=${userDataDir}`,
        "about:blank",
      ],
      { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
    );
    const browser = new Browser(child);
    await browser.send("Browser.getVersion"); // the pipe answers: the browser is up
    return browser;
  }

  send<T = any>(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<T> {
    const id = this.nextId++;
    const message: Message = { id, method, params, ...(sessionId !== undefined && { sessionId }) };
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.input.write(`${JSON.stringify(message)}\0`);
    });
  }

  /** The next event `method` (for `sessionId`) that `match` accepts, or an error after `timeoutMs`. */
  waitFor(method: string, sessionId: string, timeoutMs = 20_000, match: (params: any) => boolean = () => true) {
    return new Promise<any>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.off(listener);
        reject(new Error(`no ${method} within ${timeoutMs} ms`));
      }, timeoutMs);
      const listener = (message: Message) => {
        if (message.method !== method || message.sessionId !== sessionId || !match(message.params)) return;
        clearTimeout(timer);
        this.off(listener);
        resolve(message.params);
      };
      this.listeners.push(listener);
    });
  }

  /** Every event `method` seen from now on, for `sessionId`. */
  collect(method: string, sessionId: string): any[] {
    const seen: any[] = [];
    this.listeners.push((message) => {
      if (message.method === method && message.sessionId === sessionId) seen.push(message.params);
    });
    return seen;
  }

  /** A new tab, attached: its session id for page-level commands. */
  async newPage(): Promise<string> {
    const { targetId } = await this.send("Target.createTarget", { url: "about:blank" });
    const { sessionId } = await this.send("Target.attachToTarget", { targetId, flatten: true });
    return sessionId as string;
  }

  /** Evaluates `expression` in the page and returns its value (by value: JSON-able results only). */
  async evaluate<T = any>(sessionId: string, expression: string): Promise<T> {
    const reply = await this.send(
      "Runtime.evaluate",
      { expression, returnByValue: true, awaitPromise: true },
      sessionId,
    );
    if (reply.exceptionDetails) throw new Error(`in the page: ${JSON.stringify(reply.exceptionDetails)}`);
    return reply.result.value as T;
  }

  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once("exit", resolve));
    this.send("Browser.close").catch(() => undefined);
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  }

  private dispatch(message: Message): void {
    if (message.id !== undefined) {
      const waiter = this.pending.get(message.id);
      this.pending.delete(message.id);
      if (message.error) waiter?.reject(new Error(message.error.message));
      else waiter?.resolve(message.result ?? {});
      return;
    }
    for (const listener of [...this.listeners]) listener(message);
  }

  private off(listener: (message: Message) => void): void {
    const at = this.listeners.indexOf(listener);
    if (at !== -1) this.listeners.splice(at, 1);
  }
}
