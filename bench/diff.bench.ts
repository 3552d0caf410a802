import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CheckpointStore, DIFF_LIMITS, SessionStore, rewind } from "../src/index.js";
import { interleavedRounds, seconds, type Suite } from "./harness.js";

/**
 * The diff bound (docs/ARCHITECTURE.md, "Diffs"): a dry run whose file is the line diff's worst case
 * inside the bounds — two unrelated texts of `maxLines` lines, where jsdiff searches until
 * `maxEditLength` and gives up — against the same dry run over a binary file of the same size, which
 * is counted in bytes without a search. The ratio is what the line diff costs at most, per file.
 */
export const diffSuite: Suite = {
  name: "diff",
  async run({ quick, tempDir }) {
    const rounds = quick ? 2 : 5;
    const lines = quick ? 2_000 : DIFF_LIMITS.maxLines;
    const text = (tag: string) => Array.from({ length: lines }, (_, i) => `${tag} line ${i}\n`).join("");
    const binary = (tag: string) => Buffer.concat([Buffer.from([0]), Buffer.from(text(tag))]);
    const base = await tempDir();
    const store = new SessionStore({ root: join(base, "sessions"), durability: "none" });
    try {
      const session = async (name: string, before: string | Buffer, after: string | Buffer) => {
        const workspace = join(base, name);
        await mkdir(workspace);
        await writeFile(join(workspace, "f"), before);
        const { id } = await store.create({ workspace });
        const target = (await store.append(id, { type: "message", payload: { role: "user", content: "go" } })).sequence;
        await new CheckpointStore(store).around(id, { tool: "edit", paths: ["f"] }, () =>
          writeFile(join(workspace, "f"), after),
        );
        return () => timed(() => rewind(store, id, { toSequence: target, dryRun: true }));
      };
      const worst = await session("text", text("old"), text("new"));
      const bytes = await session("binary", binary("old"), binary("new"));
      const samples = await interleavedRounds(rounds, { worst, bytes });
      const ours = seconds(`dry run, two unrelated ${lines}-line texts (gives up at maxEditLength)`, samples.worst);
      const baseline = seconds("dry run, the same bytes as a binary file (counted in bytes)", samples.bytes);
      return [
        {
          suite: "diff: worst line diff inside the bounds vs bytes only",
          ours,
          baseline,
          ratio: ours.value / baseline.value,
          target: undefined,
          notes: `maxEditLength ${DIFF_LIMITS.maxEditLength}, ${rounds} rounds`,
          details: { worstSeconds: ours.value },
        },
      ];
    } finally {
      await store.close();
    }
  },
};

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}
