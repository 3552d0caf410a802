import { Worker } from "node:worker_threads";

/**
 * One worker thread per process for a kind of job, started at the first ask and running `source` (plain
 * CommonJS text, so it needs no file of its own in the package). Its code answers each message
 * `{ id, job }` with `{ id, answer }`. Unref'd while idle, so it never keeps a process alive; held while a job
 * is out, since the caller waits for it. `ask` gives undefined when the thread could not start or died:
 * the caller then does the job itself (later asks too).
 */
export class HelperThread<Job, Answer> {
  private thread: Worker | undefined;
  private broken = false;
  private readonly waiting = new Map<number, (answer: Answer | undefined) => void>();
  private next = 0;

  constructor(private readonly source: string) {}

  /** The thread is up (an ask will reach it): for callers that choose it only once it is there. */
  get started(): boolean {
    return this.thread !== undefined;
  }

  /** Starts the thread now, if it is not up, so that the first ask does not wait for it to boot. */
  warm(): void {
    this.start();
  }

  ask(job: Job, transfer: readonly ArrayBuffer[] = []): Promise<Answer | undefined> {
    const thread = this.start();
    if (!thread) return Promise.resolve(undefined);
    return new Promise<Answer | undefined>((resolve) => {
      const id = this.next++;
      this.waiting.set(id, resolve);
      thread.ref();
      thread.postMessage({ id, job }, [...transfer]);
    }).finally(() => {
      if (this.waiting.size === 0) this.thread?.unref();
    });
  }

  private start(): Worker | undefined {
    if (this.broken) return undefined;
    if (this.thread) return this.thread;
    let thread: Worker;
    try {
      thread = new Worker(this.source, { eval: true });
    } catch {
      this.broken = true;
      return undefined;
    }
    thread.unref();
    thread.on("message", ({ id, answer }: { id: number; answer: Answer }) => {
      this.waiting.get(id)?.(answer);
      this.waiting.delete(id);
    });
    // A thread that died (or could not start) leaves its jobs to be done by the callers.
    const orphan = () => {
      this.broken = true;
      this.thread = undefined;
      for (const resolve of this.waiting.values()) resolve(undefined);
      this.waiting.clear();
    };
    thread.on("error", orphan);
    thread.on("exit", orphan);
    this.thread = thread;
    return thread;
  }
}
