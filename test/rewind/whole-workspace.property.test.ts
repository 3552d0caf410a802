// The whole promise, against a model: a generated workspace (links inside, outside and dangling, modes, empty
// folders, and by family names that are not UTF-8, 255-byte names, hard links, owners), then a random sequence
// of real shell commands run by /bin/sh under aroundCommand (mv, rm -rf, cp -a, ln -s, chmod, truncate, touch -r,
// kind changes) and tool edits under around, with a whole-tree snapshot (kind, bytes, mode, link target) after
// each step. Rewinds ("files" or "all") to random earlier steps must give that step's tree back, and an undo
// right after must give back the tree before the rewind. Failures shrink to a minimal sequence.
//
// Settings (docs/ARCHITECTURE.md, "Tests"): AGENT_TAPE_PROPERTY_RUNS (default rounds(8, 60): 8 in npm test,
// 60 in the soak tier), AGENT_TAPE_PROPERTY_SEED (default: a new one, printed), AGENT_TAPE_PROPERTY_FAMILIES
// (a comma list of the hostile families below, or "all"; the default is the families the library handles today).
import { execFile } from "node:child_process";
import { chown, link, mkdir, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import fc from "fast-check";
import { expect, it } from "vitest";
import { CheckpointStore, rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/whole-tree.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const sh = promisify(execFile);

/**
 * Hostile families, each a kind of name or change the generator may use. The default holds only those the
 * library handles on this branch; the others are named by AGENT_TAPE_PROPERTY_FAMILIES to find what breaks.
 */
const FAMILIES = {
  /** Names whose bytes are not UTF-8 (`bad-\xff.txt`, a folder `dir-\xff/`). */
  "non-utf8": true,
  /** Names of 255 bytes, the most a name may have. */
  "long-names": true,
  /** A folder replaced by a file or a link (`rm -rf d && echo x > d`), and tool edits below a path made a file. */
  "kind-changes": true,
  /** A folder `deep` whose file lies past PATH_MAX (36 folders of 120 bytes), moved, copied and removed whole. */
  "deep-paths": true,
  /** Files sharing an inode inside the workspace (`ln a b`), and their groups compared: groups are split (README). */
  "hard-links": false,
  /** Owners and groups changed by `chown`, and compared. */
  owners: false,
  /** Tool edits naming a link inside the workspace (the write lands on the link's target, captured by its name). */
  "tool-through-links": true,
} satisfies Record<string, boolean>;
type Family = keyof typeof FAMILIES;

const families = familiesFromEnvironment();
const RUNS = Number(process.env.AGENT_TAPE_PROPERTY_RUNS ?? rounds(8, 60));
const SEED = Number(process.env.AGENT_TAPE_PROPERTY_SEED ?? Date.now() % 2 ** 31);
/** A run slower than this prints how long each of its steps took (a run takes 0.2-1 s). */
const SLOW_RUN_MS = 5_000;

function familiesFromEnvironment(): Set<Family> {
  const named = process.env.AGENT_TAPE_PROPERTY_FAMILIES;
  const all = Object.keys(FAMILIES) as Family[];
  if (named === undefined) return new Set(all.filter((family) => FAMILIES[family]));
  if (named.trim() === "all") return new Set(all);
  const chosen = named.split(",").map((family) => family.trim()) as Family[];
  for (const family of chosen) if (!all.includes(family)) throw new Error(`unknown family "${family}"`);
  return new Set(chosen);
}

const has = (family: Family) => families.has(family);

// A name as the bytes the file system holds, written here as latin1 text ("\xff" is the byte 0xff).
const bytes = (name: string) => Buffer.from(name, "latin1");
const LONG = "L".repeat(251) + ".txt"; // 255 bytes
/** `deep/` then 36 folders of 120 bytes (past PATH_MAX: 4096 bytes) and a file at the bottom. */
const DEEP =
  `mkdir deep && cd deep && for i in $(seq 36); do mkdir ${"p".repeat(117)}$i && cd -P ${"p".repeat(117)}$i; done` +
  " && echo bottom > bottom.txt";

/** Names that hold files and links (leaves), and names that hold folders: the operations pick from these. */
const LEAVES: readonly string[] = [
  "a.txt",
  "b.txt",
  "d/c.txt",
  "d/e/f.txt",
  "new/g.txt",
  "in-link",
  "dir-link",
  "out-link",
  "dangling",
  ...(has("non-utf8") ? ["bad-\xff.txt", "dir-\xff/h.txt"] : []),
  ...(has("long-names") ? [LONG, `d/${LONG}`] : []),
  ...(has("hard-links") ? ["hard-1", "d/hard-2"] : []),
];
const FOLDERS: readonly string[] = [
  "d",
  "d/e",
  "empty",
  "new",
  ...(has("non-utf8") ? ["dir-\xff"] : []),
  ...(has("deep-paths") ? ["deep"] : []),
];
/** Paths a tool names in `touches`: text paths (a tool's path is a string, so UTF-8). */
const LINKS = ["in-link", "dir-link", "out-link", "dangling"];
const toolMayName = (path: string) => has("tool-through-links") || !LINKS.includes(path);
const isText = (path: string) => Buffer.from(path, "latin1").every((byte) => byte < 0x80);
const CONTENTS = ["", "one\n", "two two\n", "three three three\n"];
const MODES = ["600", "644", "755", "700"];

/** A path as one shell word: plain when it can be, else the bytes made by printf (names that are not UTF-8). */
function word(path: string): string {
  if (/^[A-Za-z0-9._/-]+$/.test(path)) return path;
  const octal = [...bytes(path)].map((byte) => `\\${byte.toString(8).padStart(3, "0")}`).join("");
  return `"$(printf '${octal}')"`;
}

// Without "kind-changes", a name never turns from a folder into a leaf or back: leaves and folders are
// separate pools (a leaf may still turn from a file into a link and back, and any path may go and come back).
const ALL = [...LEAVES, ...FOLDERS];
const leaf = fc.constantFrom(...(has("kind-changes") ? ALL : LEAVES));
const folder = fc.constantFrom(...(has("kind-changes") ? ALL : FOLDERS));
const path = fc.constantFrom(...ALL);
const sameClass = fc.oneof(fc.tuple(leaf, leaf), fc.tuple(folder, folder));
const content = fc.constantFrom(...CONTENTS);

/** One shell operation, as the text /bin/sh runs. */
const operation: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(leaf, content).map(([p, c]) => `printf '${c.replace(/\n/g, "\\n")}' > ${word(p)}`),
  fc.tuple(leaf, content).map(([p, c]) => `printf '${c.replace(/\n/g, "\\n")}' >> ${word(p)}`),
  path.map((p) => `rm -rf ${word(p)}`),
  folder.map((p) => `mkdir -p ${word(p)}`),
  sameClass.map(([a, b]) => `mv -f ${word(a)} ${word(b)}`),
  sameClass.map(([a, b]) => `cp -a ${word(a)} ${word(b)}`),
  fc
    .tuple(fc.constantFrom("a.txt", "d", "../outside", "nowhere", "d/c.txt"), leaf)
    .map(([target, p]) => `ln -s ${target} ${word(p)}`),
  fc.tuple(fc.constantFrom(...MODES), path).map(([mode, p]) => `chmod ${mode} ${word(p)}`),
  fc.tuple(fc.constantFrom(0, 3, 100), leaf).map(([size, p]) => `truncate -s ${size} ${word(p)}`),
  fc.tuple(path, path).map(([a, b]) => `touch -r ${word(a)} ${word(b)}`),
  ...(has("kind-changes")
    ? [
        fc
          .tuple(fc.constantFrom("d", "d/e", "empty", "new"), content)
          .map(([p, c]) => `rm -rf ${p} && echo '${c}' > ${p}`),
        fc.constantFrom("d", "d/e", "empty").map((p) => `rm -rf ${p} && ln -s a.txt ${p}`),
        fc.constantFrom("d/e", "empty").map((p) => `rm -rf ${p} && cp -a d ${p} 2>/dev/null; true`),
        fc.constantFrom("a.txt", "b.txt", "in-link").map((p) => `rm -rf ${p} && mkdir ${p} && echo x > ${p}/inner`),
      ]
    : []),
  ...(has("hard-links") ? [fc.tuple(leaf, leaf).map(([a, b]) => `ln -f ${word(a)} ${word(b)}`)] : []),
  ...(has("owners")
    ? [fc.tuple(fc.constantFrom("1000:1000", "0:0", "1234:5678"), path).map(([o, p]) => `chown -h ${o} ${word(p)}`)]
    : []),
);

type Step =
  | { kind: "command"; script: string }
  | { kind: "tool"; path: string; content: string | null }
  | { kind: "rewind"; pick: number; mode: "files" | "all"; thenUndo: boolean };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .array(operation, { minLength: 1, maxLength: 3 })
      .map((ops) => ({ kind: "command" as const, script: ops.join("; ") })),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("tool" as const),
      path: fc.constantFrom(...(has("kind-changes") ? ALL : LEAVES).filter((p) => isText(p) && toolMayName(p))),
      content: fc.option(content, { nil: null }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("rewind" as const),
      pick: fc.nat(),
      mode: fc.constantFrom("files" as const, "all" as const),
      thenUndo: fc.boolean(),
    }),
  },
);

/** The generated starting workspace: which optional shapes it has, and the modes of its files. */
const start = fc.record({
  modes: fc.array(fc.constantFrom(...MODES), { minLength: 3, maxLength: 3 }),
  links: fc.subarray(["in-link", "dir-link", "out-link", "dangling"] as const),
  emptyFolder: fc.boolean(),
});
type Start = typeof start extends fc.Arbitrary<infer T> ? T : never;

async function makeWorkspace(workspace: string, shape: Start): Promise<void> {
  const files = ["a.txt", "d/c.txt", "d/e/f.txt"];
  for (const [i, file] of files.entries()) {
    await mkdir(dirname(join(workspace, file)), { recursive: true });
    await writeFile(join(workspace, file), CONTENTS[i + 1]!, { mode: Number.parseInt(shape.modes[i]!, 8) });
  }
  if (shape.emptyFolder) await mkdir(join(workspace, "empty"));
  const targets = { "in-link": "a.txt", "dir-link": "d", "out-link": "../outside", dangling: "nowhere" };
  for (const name of shape.links) await symlink(targets[name], join(workspace, name));
  if (has("non-utf8")) {
    await writeFile(Buffer.from(`${workspace}/bad-\xff.txt`, "latin1"), "bad\n");
    await mkdir(Buffer.from(`${workspace}/dir-\xff`, "latin1"));
    await writeFile(Buffer.from(`${workspace}/dir-\xff/h.txt`, "latin1"), "inside a bad name\n");
  }
  if (has("long-names")) await writeFile(join(workspace, "d", LONG), "long\n");
  if (has("deep-paths")) await sh("/bin/sh", ["-c", DEEP], { cwd: workspace });
  if (has("hard-links")) {
    await writeFile(join(workspace, "hard-1"), "linked\n");
    await link(join(workspace, "hard-1"), join(workspace, "d/hard-2"));
  }
  if (has("owners")) await chown(join(workspace, "d/c.txt"), 1000, 1000);
}

/** A tool edit as a tool does it: write the file (making its folder) or delete it; failing like a tool would. */
async function toolEdit(workspace: string, edit: { path: string; content: string | null }): Promise<void> {
  const absolute = join(workspace, edit.path);
  try {
    if (edit.content === null) await rm(absolute, { recursive: true, force: true });
    else {
      await mkdir(dirname(absolute), { recursive: true });
      await writeFile(absolute, edit.content);
    }
  } catch {
    // A path whose folder is a file, a folder where a file is written: the tool fails, as a real one would.
  }
}

it(`generated workspace under shell and tool edits rewinds and undoes whole trees (${RUNS} runs)`, async () => {
  console.log(
    `whole-workspace property: ${RUNS} runs, seed ${SEED}, families [${[...families].join(", ") || "none"}]` +
      " (AGENT_TAPE_PROPERTY_RUNS, AGENT_TAPE_PROPERTY_SEED, AGENT_TAPE_PROPERTY_FAMILIES)",
  );
  await fc.assert(
    fc.asyncProperty(start, fc.array(step, { minLength: 1, maxLength: 10 }), async (shape, steps) => {
      const base = await realpath(await tempDir("agent-tape-whole-workspace-"));
      const workspace = join(base, "ws");
      await mkdir(join(base, "outside"));
      await makeWorkspace(workspace, shape);
      const store = openStore({ root: join(base, "sessions") });
      const checkpoints = new CheckpointStore(store);
      const treeOptions = { hardLinks: has("hard-links"), owners: has("owners") };
      const tree = () => byteTreeOf(workspace, treeOptions);
      // Each step's time, printed when a run is slow: inside the full suite this file has taken 30 times its time
      // alone, a slowness no run alone has shown; a slow run names the steps it waited in.
      const started = performance.now();
      const timings: string[] = [];
      try {
        const { id } = await store.create({ workspace });
        await store.append(id, { type: "message", payload: { role: "user", content: "start" } });
        const head = async () => (await store.get(id))!.lastSequence;
        const model = new Map<number, Record<string, string>>([[await head(), await tree()]]);
        for (const s of steps) {
          const stepStarted = performance.now();
          if (s.kind === "command") {
            await checkpoints.aroundCommand(id, { tool: "bash" }, () =>
              sh("/bin/sh", ["-c", s.script], { cwd: workspace }).catch(() => undefined),
            );
          } else if (s.kind === "tool") {
            await checkpoints.around(id, { tool: "edit", paths: [s.path] }, () => toolEdit(workspace, s));
          } else {
            const points = [...model.keys()];
            const target = points[s.pick % points.length]!;
            const before = await tree();
            const headBefore = await head();
            await rewind(store, id, { toSequence: target, mode: s.mode });
            expect(await tree(), `rewound (${s.mode}) to #${target}`).toEqual(model.get(target));
            // A rewind to the head changes nothing and appends no marker: there is nothing to undo then.
            if (s.thenUndo && (await head()) !== headBefore) {
              await undoRewind(store, id);
              expect(await tree(), `undid the rewind to #${target}`).toEqual(before);
              // The undo appends the cut events again under new numbers: only the points up to the target
              // keep their numbers, and the head is the tree as it was before the rewind.
            }
            if (s.mode === "all") for (const point of points) if (point > target) model.delete(point);
          }
          model.set(await head(), await tree());
          timings.push(`${Math.round(performance.now() - stepStarted)} ms: ${JSON.stringify(s)}`);
        }
      } finally {
        const took = performance.now() - started;
        if (took > SLOW_RUN_MS)
          console.log(`a slow run, ${Math.round(took)} ms (seed ${SEED}), from ${JSON.stringify(shape)}:`, timings);
        checkpoints.close();
        await store.close();
        await sh("rm", ["-rf", base]); // GNU rm goes to any depth; node's rm stops at PATH_MAX
      }
    }),
    { numRuns: RUNS, seed: SEED },
  );
}, 600_000);
