// onLockWait: a wait for another process's lock is not silent.
import { describe, expect, it } from "vitest";
import type { LockWait } from "../../src/index.js";
import { Child, childrenKilledAfterEach } from "../helpers/children.js";
import { cli } from "../cli/harness.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const children = childrenKilledAfterEach();
const say = (content: string) => ({ type: "message" as const, payload: { role: "user" as const, content } });

async function heldByChild(staleMs: number) {
  const root = await tempDir();
  const store = openStore({ root, lockStaleMs: staleMs });
  const { id } = await store.create({ workspace: await tempDir() });
  await store.close();
  const holder = new Child("hold-session-lock.ts", [root, id, String(staleMs)]);
  children.push(holder);
  expect(await holder.waitForLine(() => true)).toBe("locked");
  return { root, id, holder };
}

describe("onLockWait", () => {
  it("names the live holder and the time until its lock goes stale; once it dies, takes its lock at once", async () => {
    // A minute: had the lock been taken only once stale, the append would wait out lockWaitMs and fail.
    const staleMs = 60_000;
    const { root, id, holder } = await heldByChild(staleMs);
    const waits: LockWait[] = [];
    const store = openStore({
      root,
      lockStaleMs: staleMs,
      lockWaitMs: 20_000,
      onLockWait: (wait) => waits.push(wait),
    });
    try {
      setTimeout(() => holder.kill(), 1500);
      expect((await store.append(id, say("after the holder"))).sequence).toBe(1);
    } finally {
      await store.close();
    }
    expect(waits.length).toBeGreaterThanOrEqual(1);
    const first = waits[0]!;
    expect(first).toMatchObject({ sessionId: id, holderPid: holder.process.pid, holderAlive: true });
    expect(first.staleInMs).toBeGreaterThan(0);
    // proper-lockfile stamps a new lock up to a second ahead (the next whole second + 5 ms).
    expect(first.staleInMs).toBeLessThanOrEqual(staleMs + 1000);
    // A holder of this machine that is gone is known for sure (src/backend/fs/holder-note.ts): never reported
    // dead and still waited for.
    expect(waits.every((wait) => wait.holderAlive === true)).toBe(true);
  });

  it("the CLI says on stderr whom it waits for", async () => {
    const { root, id, holder } = await heldByChild(2000);
    setTimeout(() => holder.kill(), 800);
    const run = await cli(["--root", root, "rewind", id, "--to", "0", "--dry-run"]);
    expect(run.stderr).toMatch(
      new RegExp(`waiting for the lock on session ${id}, held by process ${holder.process.pid}`),
    );
  });
});
