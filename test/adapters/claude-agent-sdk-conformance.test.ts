// What the Claude Agent SDK asks of every `SessionStore` beyond append and load, re-expressed against
// agent-tape/claude-agent-sdk: listing only sessions that have a main transcript, session ids that round-trip
// whatever their characters, and the summaries that spare the SDK a load per session when it lists.
import fc from "fast-check";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type ClaudeSessionEntry,
  type ClaudeSessionKey,
  type ClaudeSessionSummary,
  claudeEvents,
  claudeSessionStore,
} from "../../src/adapters/claude-agent-sdk/index.js";
import { rewind } from "../../src/index.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, rootOrStore, tempDir } from "../helpers/fixture.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

/**
 * Stands in for the SDK's `foldSessionSummary` (pure, incremental: folding two batches in turn gives what folding
 * them at once gives): it counts the entries and keeps the first uuid, and records every batch it was handed.
 */
function recordingFold() {
  const batches: string[][] = [];
  const fold = (
    prev: ClaudeSessionSummary | undefined,
    key: ClaudeSessionKey,
    entries: ClaudeSessionEntry[],
    options?: { mtime?: number },
  ): ClaudeSessionSummary => {
    batches.push(entries.map((e) => e.uuid ?? "-"));
    return {
      sessionId: key.sessionId,
      mtime: options?.mtime ?? prev?.mtime ?? 0,
      data: {
        count: ((prev?.data.count as number | undefined) ?? 0) + entries.length,
        first: prev?.data.first ?? entries[0]?.uuid,
        subpath: key.subpath ?? null,
      },
    };
  };
  return { fold, batches };
}

async function open(options: { root?: string; fold?: ReturnType<typeof recordingFold>["fold"] } = {}) {
  const root = options.root ?? join(await tempDir("agent-tape-claude-"), "sessions");
  const store = claudeSessionStore({
    ...rootOrStore(root, claudeEvents),
    ...(options.fold !== undefined && { foldSessionSummary: options.fold }),
  });
  closers.push(() => store.close());
  return { store, root };
}

const projectKey = "-home-me-project";
const entry = (uuid: string) => ({ type: "user", uuid, message: { role: "user", content: uuid } });

describe("agent-tape/claude-agent-sdk, the SDK's SessionStore conformance cases", () => {
  it("listSessions leaves out a session holding only a subagent transcript", async () => {
    const { store } = await open();
    const main = { projectKey, sessionId: "with-main" };
    const onlySub = { projectKey, sessionId: "only-subagent" };
    await store.append(main, [entry("m1")]);
    await store.append({ ...onlySub, subpath: "subagents/agent-a" }, [entry("s1")]);
    expect((await store.listSessions(projectKey)).map((s) => s.sessionId)).toEqual(["with-main"]);

    // Once its main transcript arrives, it is listed (and, written last, is the newest).
    await store.append(onlySub, [entry("m2")]);
    const listed = await store.listSessions(projectKey);
    expect(listed.map((s) => s.sessionId).sort()).toEqual(["only-subagent", "with-main"]);
    for (const { sessionId } of listed) expect(await store.load({ projectKey, sessionId })).not.toBeNull();
  });

  it("an id outside the tape id pattern (a space, 81 characters) round-trips through listSessions", async () => {
    const { store } = await open();
    const ids = ["has a space", "x".repeat(81), "ünïcödé/slash", "h".padEnd(41, "0")];
    for (const [i, sessionId] of ids.entries()) await store.append({ projectKey, sessionId }, [entry(`u${i}`)]);
    const listed = (await store.listSessions(projectKey)).map((s) => s.sessionId);
    expect(listed.sort()).toEqual([...ids].sort());
    for (const [i, sessionId] of ids.entries())
      expect(await store.load({ projectKey, sessionId })).toEqual([entry(`u${i}`)]);
  });

  // Rounds: AGENT_TAPE_ROUNDS (8 by default, 100 in the soak tier); each round is a project of its own in one store,
  // so a round lists among all the rounds before it: on PostgreSQL 200 rounds took 20 s, 100 took 7 s.
  const projects = rounds(8, 100);
  it(`any session id round-trips: listSessions gives the ids load finds (generated, ${projects} runs)`, async () => {
    const { store } = await open();
    let project = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.string({ minLength: 1, maxLength: 100 }), { minLength: 1, maxLength: 4 }),
        async (ids) => {
          const projectKey = `project ${project++}`;
          for (const sessionId of ids) await store.append({ projectKey, sessionId }, [entry(sessionId)]);
          const listed = (await store.listSessions(projectKey)).map((s) => s.sessionId);
          expect(listed.sort()).toEqual([...ids].sort());
          for (const sessionId of listed)
            expect(await store.load({ projectKey, sessionId })).toEqual([entry(sessionId)]);
        },
      ),
      { numRuns: projects },
    );
  }, 120_000);

  it("listSessionSummaries: per listed session its main transcript folded, at listSessions' mtime", async () => {
    const { fold, batches } = recordingFold();
    const { store } = await open({ fold });
    const odd = { projectKey, sessionId: "an id with spaces" };
    const plain = { projectKey, sessionId: "plain" };
    await store.append(odd, [entry("a1"), entry("a2")]);
    await store.append({ ...odd, subpath: "subagents/agent-a" }, [entry("sub1")]);
    await store.append(plain, [entry("b1")]);
    await store.append({ projectKey, sessionId: "sub-only", subpath: "subagents/x" }, [entry("x1")]);
    await store.append({ projectKey: "another project", sessionId: "elsewhere" }, [entry("e1")]);

    const listed = await store.listSessions(projectKey);
    const summaries = await store.listSessionSummaries!(projectKey);
    expect(summaries.sort((a, b) => a.sessionId.localeCompare(b.sessionId))).toEqual([
      { sessionId: "an id with spaces", mtime: mtimeOf(listed, odd.sessionId), data: summary(2, "a1") },
      { sessionId: "plain", mtime: mtimeOf(listed, "plain"), data: summary(1, "b1") },
    ]);
    // Only main transcripts are folded: no subagent entry reached the fold.
    expect(batches.flat()).not.toContain("sub1");
  });

  it("listSessionSummaries folds only what was appended since it last looked, and follows a rewind", async () => {
    const { fold, batches } = recordingFold();
    const { store, root } = await open({ fold });
    const key = { projectKey, sessionId: "s1" };
    await store.append(key, [entry("u1"), entry("u2")]);
    expect((await store.listSessionSummaries!(projectKey))[0]?.data).toEqual(summary(2, "u1"));
    await store.append(key, [entry("u3")]);
    batches.length = 0;
    const [after] = await store.listSessionSummaries!(projectKey);
    expect(after?.data).toEqual(summary(3, "u1"));
    expect(batches).toEqual([["u3"]]);

    // A rewind takes entries off the tape: the summary is folded again from what is left.
    const tapes = openStore({ root, events: claudeEvents });
    await rewind(tapes, store.tapeSessionId(key), { toSequence: 1, mode: "conversation" });
    const [rewound] = await store.listSessionSummaries!(projectKey);
    expect(rewound).toEqual({
      sessionId: "s1",
      mtime: mtimeOf(await store.listSessions(projectKey), "s1"),
      data: summary(1, "u1"),
    });
  });

  it("another process's store lists the same summaries, folded from the tape", async () => {
    const { fold } = recordingFold();
    const { store, root } = await open({ fold });
    await store.append({ projectKey, sessionId: "s1" }, [entry("u1")]);
    const { store: other } = await open({ root, fold: recordingFold().fold });
    expect(await other.listSessionSummaries!(projectKey)).toEqual(await store.listSessionSummaries!(projectKey));
  });

  it("without the SDK's fold there is no listSessionSummaries, so the SDK lists by listSessions and load", async () => {
    const { store } = await open();
    expect(store.listSessionSummaries).toBeUndefined();
  });
});

function mtimeOf(listed: { sessionId: string; mtime: number }[], sessionId: string): number {
  const found = listed.find((s) => s.sessionId === sessionId);
  if (!found) throw new Error(`${sessionId} is not listed`);
  return found.mtime;
}

function summary(count: number, first: string) {
  return { count, first, subpath: null };
}
