// Links to folders inside the workspace, against a model: the shapes the whole-workspace property test found two
// bugs in (a tool handed a link or a path below one; a rewind putting back the folder a link leads to), made the
// whole of the generator. A workspace of a few folders and links to them (relative and absolute targets, a link
// in a subfolder, a link in a folder another link leads to, a link to a link), then a random sequence of
// - shell commands under aroundCommand: make a folder or a file (through links too), make a link to a folder or
//   to the workspace itself, re-point one, replace one by a folder or a file, remove one, remove the folder a
//   link leads to (the link dangles) and make it again, delete through a link, chmod through one, mv and cp -a;
// - tool calls under around, named as a tool names them: a file written through a link (`la/sub/f.txt`, or the
//   link itself), folders made below a link, a link handed over and replaced, re-pointed or removed, a folder
//   written into through the link that names it, a folder a link leads to removed;
// - rewinds ("files" or "all", some with keepUndo 0) to a random earlier point (a message is appended before
//   each step: the points are those messages and the steps' heads), each maybe undone right after.
// After a rewind to T the whole tree (kinds, bytes, modes, link targets) is the tree at T, but for the paths it
// reports skipped "undo_not_kept" (what a "files" rewind with keepUndo 0 changed and kept no copy of), left as they
// were; after the undo, the tree before the rewind; and no REWIND_CONFLICT, since nothing outside the session
// touches the workspace.
// Links leading out of the workspace are not generated (docs/ARCHITECTURE.md, "Confinement"), nor hard links
// (README, "Limits").
//
// Settings as the whole-workspace property test's: AGENT_TAPE_PROPERTY_RUNS (default rounds(12, 120): 12 in npm
// test, 2-3 s, 120 in the soak tier, or AGENT_TAPE_ROUNDS), AGENT_TAPE_PROPERTY_SEED (default: a new one, printed).
// Checked against the capture before 82d3c1a (a path below a link not recorded where it lands): at 12 runs, 2 seeds
// of 6 failed; at 40 runs, 2 of 4. AGENT_TAPE_PROPERTY_ROOT_LINKS=1 lets links lead to the workspace itself too.
import { execFile } from "node:child_process";
import { chmod, mkdir, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { posix } from "node:path";
import { isDeepStrictEqual, promisify } from "node:util";
import fc from "fast-check";
import { expect, it } from "vitest";
import { CheckpointStore, type ReportedChange, rewind, undoRewind } from "../../src/index.js";
import { byteTreeOf } from "../helpers/whole-tree.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const { dirname, join, relative } = posix;
const sh = promisify(execFile);

const RUNS = Number(process.env.AGENT_TAPE_PROPERTY_RUNS ?? rounds(12, 120));
// CI pins its seed (AGENT_TAPE_LINKS_INSIDE_SEED in .ci/run): a new seed at 120 runs may still find a bug (one in
// eight did in the last hunt, fixed since: docs/testing.md), which a landing should not hang on; a hunt passes no
// seed, or another one.
const SEED = Number(
  process.env.AGENT_TAPE_LINKS_INSIDE_SEED ?? process.env.AGENT_TAPE_PROPERTY_SEED ?? Date.now() % 2 ** 31,
);

/** Real folders at the start, which links lead to (and which the operations remove and make again). */
const FOLDERS = ["a", "b", "b/sub", "c"] as const;
/** Names that hold links at the start (some of them), in a subfolder and in a folder a link leads to too. */
const LINKS = ["la", "lb", "nested/ln", "b/lx", "lla"] as const;
/** Where a link may lead: a folder, the workspace itself ("."), or (for `lla` alone) another link. */
// A link to the workspace itself only with AGENT_TAPE_PROPERTY_ROOT_LINKS=1: a tool handed one and writing through
// it is not rewound (the capture does not follow a link to the workspace root, which would take the whole of it).
const ROOT_LINKS = process.env.AGENT_TAPE_PROPERTY_ROOT_LINKS === "1";
const FOLDER_TARGETS: readonly string[] = ROOT_LINKS ? [...FOLDERS, "."] : FOLDERS;
const CONTENTS = ["", "one\n", "two two\n"];
const MODES = ["700", "755", "750"];

/** A link's target as generated: a path inside the workspace, written relative to the link's folder or absolute. */
interface Target {
  to: string;
  absolute: boolean;
}

/** The text a link named `link` holds to lead to `target`, in the workspace `workspace`. */
function targetText(workspace: string, link: string, target: Target): string {
  const to = target.to === "." ? "" : target.to;
  if (target.absolute) return to === "" ? workspace : join(workspace, to);
  const from = dirname(link) === "." ? "" : dirname(link);
  return relative(`/${from}`, `/${to}`) || ".";
}

const link = fc.constantFrom(...LINKS);
const folderOrLink = fc.constantFrom(...FOLDERS, ...LINKS);
const content = fc.constantFrom(...CONTENTS);
const folderTarget = fc.record({ to: fc.constantFrom(...FOLDER_TARGETS), absolute: fc.boolean() });
/** A link and where it may lead: `lla` may lead to `la` or `lb` too (a chain; never a loop: they lead to folders). */
const linkAndTarget = fc.oneof(
  fc.tuple(link, folderTarget),
  fc.tuple(fc.constant("lla"), fc.record({ to: fc.constantFrom("la", "lb"), absolute: fc.boolean() })),
);
/** A file path below a folder or a link: `x/f.txt`, `x/sub/g.txt`, or (written through) a link itself. */
const filePath = fc.oneof(
  fc.tuple(folderOrLink, fc.constantFrom("f.txt", "sub/g.txt", "x.txt")).map(([p, name]) => `${p}/${name}`),
  link,
);

/** One shell operation, with the workspace's path in it where a link's target is absolute. */
type Op =
  | { op: "mkdir"; path: string }
  | { op: "write"; path: string; content: string }
  | { op: "link"; link: string; target: Target }
  | { op: "repoint"; link: string; target: Target }
  | { op: "to-folder"; path: string }
  | { op: "to-file"; path: string; content: string }
  | { op: "rm"; path: string }
  | { op: "rm-through"; link: string }
  | { op: "chmod"; mode: string; path: string }
  | { op: "mv"; from: string; to: string }
  | { op: "cp"; from: string; to: string };

const operation: fc.Arbitrary<Op> = fc.oneof(
  fc.tuple(folderOrLink, fc.constantFrom("", "/new", "/new/deeper")).map(([p, below]) => ({
    op: "mkdir" as const,
    path: p + below,
  })),
  { arbitrary: fc.record({ op: fc.constant("write" as const), path: filePath, content }), weight: 2 },
  {
    arbitrary: linkAndTarget.map(([l, target]) => ({ op: "link" as const, link: l, target })),
    weight: 2,
  },
  linkAndTarget.map(([l, target]) => ({ op: "repoint" as const, link: l, target })),
  folderOrLink.map((path) => ({ op: "to-folder" as const, path })),
  fc.record({ op: fc.constant("to-file" as const), path: link, content }),
  { arbitrary: folderOrLink.map((path) => ({ op: "rm" as const, path })), weight: 2 },
  link.map((l) => ({ op: "rm-through" as const, link: l })),
  fc.record({ op: fc.constant("chmod" as const), mode: fc.constantFrom(...MODES), path: folderOrLink }),
  fc.record({ op: fc.constant("mv" as const), from: folderOrLink, to: folderOrLink }),
  fc.record({ op: fc.constant("cp" as const), from: folderOrLink, to: folderOrLink }),
);

/** What /bin/sh runs for `op` (the paths are plain ASCII words; the workspace's path is quoted). */
function script(workspace: string, op: Op): string {
  const quoted = (text: string) => `'${text}'`;
  const to = "target" in op ? quoted(targetText(workspace, op.link, op.target)) : "";
  const parent = (path: string) => (dirname(path) === "." ? "" : `mkdir -p ${dirname(path)} && `);
  switch (op.op) {
    case "mkdir":
      return `mkdir -p ${op.path}`;
    case "write":
      return `${parent(op.path)}printf '${op.content.replace(/\n/g, "\\n")}' > ${op.path}`;
    case "link":
      return `rm -rf ${op.link}; ${parent(op.link)}ln -s ${to} ${op.link}`;
    case "repoint":
      return `ln -sfn ${to} ${op.link}`;
    case "to-folder":
      return `rm -rf ${op.path} && mkdir -p ${op.path} && echo inner > ${op.path}/inner`;
    case "to-file":
      return `rm -rf ${op.path} && printf '${op.content.replace(/\n/g, "\\n")}' > ${op.path}`;
    case "rm":
      return `rm -rf ${op.path}`;
    case "rm-through":
      return `rm -rf ${op.link}/*`;
    case "chmod":
      return `chmod ${op.mode} ${op.path}`;
    case "mv":
      return `mv -f ${op.from} ${op.to}`;
    case "cp":
      return `cp -a ${op.from} ${op.to}`;
  }
}

/** One tool call: the paths it names (as a tool names them) and what it does. */
type Tool =
  | { tool: "write"; path: string; content: string | null }
  | { tool: "mkdirs"; path: string }
  | { tool: "replace-link"; link: string; by: "folder" | "file" | "nothing" }
  | { tool: "repoint"; link: string; target: Target }
  | { tool: "write-into"; link: string; content: string }
  | { tool: "rm-folder"; path: string }
  | { tool: "edit-folder"; path: string; content: string };

const toolCall: fc.Arbitrary<Tool> = fc.oneof(
  {
    arbitrary: fc.record({ tool: fc.constant("write" as const), path: filePath, content: fc.option(content) }),
    weight: 3,
  },
  fc
    .tuple(folderOrLink, fc.constantFrom("new", "new/deeper", "sub/new"))
    .map(([p, below]) => ({ tool: "mkdirs" as const, path: `${p}/${below}` })),
  fc.record({
    tool: fc.constant("replace-link" as const),
    link,
    by: fc.constantFrom("folder" as const, "file" as const, "nothing" as const),
  }),
  linkAndTarget.map(([l, target]) => ({ tool: "repoint" as const, link: l, target })),
  fc.record({ tool: fc.constant("write-into" as const), link, content }),
  fc.record({ tool: fc.constant("rm-folder" as const), path: folderOrLink }),
  // A folder named whole (the tape then holds its complete listing), a file in it edited.
  fc.record({ tool: fc.constant("edit-folder" as const), path: folderOrLink, content }),
);

/** The paths the tool names to the capture. */
const named = (call: Tool): string[] => ["path" in call ? call.path : call.link];

/** The tool's work, as a tool does it; failing (a folder where a file is written, a dangling link) as one would. */
async function runTool(workspace: string, call: Tool): Promise<void> {
  const at = (path: string) => join(workspace, path);
  try {
    switch (call.tool) {
      case "write":
        if (call.content === null) await rm(at(call.path), { recursive: true, force: true });
        else {
          await mkdir(dirname(at(call.path)), { recursive: true });
          await writeFile(at(call.path), call.content);
        }
        return;
      case "mkdirs":
        await mkdir(at(call.path), { recursive: true });
        return;
      case "replace-link":
        await rm(at(call.link), { force: true }); // the link itself, never what it leads to
        if (call.by === "folder") {
          await mkdir(at(call.link), { recursive: true });
          await writeFile(join(at(call.link), "made.txt"), "made by a tool\n");
        } else if (call.by === "file") await writeFile(at(call.link), "a file now\n");
        return;
      case "repoint":
        await rm(at(call.link), { force: true });
        await mkdir(dirname(at(call.link)), { recursive: true });
        await symlink(targetText(workspace, call.link, call.target), at(call.link));
        return;
      case "write-into":
        await writeFile(join(at(call.link), "into.txt"), call.content);
        return;
      case "edit-folder":
        await writeFile(join(at(call.path), "x.txt"), call.content);
        return;
      case "rm-folder":
        await rm(at(call.path), { recursive: true, force: true });
        return;
    }
  } catch {
    // A path whose folder is a file or a dangling link, a file written where a folder is: the tool fails.
  }
}

type Step =
  | { kind: "command"; ops: Op[] }
  | { kind: "tool"; call: Tool }
  | {
      kind: "rewind";
      pick: number;
      /** Whether the target may be a point whose tree is the one there now (else such points are left out). */
      anyPoint: boolean;
      mode: "files" | "all";
      afterwards: "undo" | "nothing" | "keep-no-undo";
    };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.array(operation, { minLength: 1, maxLength: 3 }).map((ops) => ({ kind: "command" as const, ops })),
  },
  { weight: 3, arbitrary: toolCall.map((call) => ({ kind: "tool" as const, call })) },
  {
    weight: 2,
    arbitrary: fc.oneof(
      fc.record({
        kind: fc.constant("rewind" as const),
        pick: fc.nat(),
        anyPoint: fc.constantFrom(false, false, false, true),
        mode: fc.constantFrom("files" as const, "all" as const),
        afterwards: fc.constantFrom("undo" as const, "nothing" as const),
      }),
      // keepUndo 0: a "files" one keeps the points between its target and its marker on the tape, and a later
      // rewind to one of them cannot know what the paths it changed were there (reported skipped, undo_not_kept).
      fc.record({
        kind: fc.constant("rewind" as const),
        pick: fc.nat(),
        anyPoint: fc.constantFrom(false, false, false, true),
        mode: fc.constantFrom("files" as const, "all" as const),
        afterwards: fc.constant("keep-no-undo" as const),
      }),
    ),
  },
);

/** The starting workspace: which links it has (each at its usual target) and the modes of its folders. */
const start = fc.record({
  // Each link there three times in four (shrinking towards none).
  links: fc
    .array(fc.constantFrom(false, true, true, true), { minLength: LINKS.length, maxLength: LINKS.length })
    .map((present) => LINKS.filter((_, i) => present[i])),
  absolute: fc.boolean(),
  modes: fc.array(fc.constantFrom(...MODES), { minLength: FOLDERS.length, maxLength: FOLDERS.length }),
  emptyC: fc.boolean(),
});
type Start = typeof start extends fc.Arbitrary<infer T> ? T : never;

async function makeWorkspace(workspace: string, shape: Start): Promise<void> {
  const files = { a: ["x.txt"], b: ["y.txt"], "b/sub": ["z.txt"], c: shape.emptyC ? [] : ["w.txt"] };
  for (const name of FOLDERS) {
    await mkdir(join(workspace, name), { recursive: true });
    for (const file of files[name]) await writeFile(join(workspace, name, file), `${name}/${file}\n`);
  }
  for (const [i, name] of FOLDERS.entries()) await chmod(join(workspace, name), Number.parseInt(shape.modes[i]!, 8));
  await mkdir(join(workspace, "nested"));
  const usual: Record<string, string> = { la: "a", lb: "b", "nested/ln": "b/sub", "b/lx": "a", lla: "la" };
  for (const name of shape.links) {
    const target = { to: usual[name]!, absolute: shape.absolute && name !== "lla" };
    await symlink(targetText(workspace, name, target), join(workspace, name));
  }
}

/** Rewinds that skipped paths as "undo_not_kept": counted, so a run shows the case came up. */
let notKeptRewinds = 0;

/**
 * The tree a rewind gives: `wanted` (the tree at its target), but as `now` at each path it skipped as
 * "undo_not_kept" (a "files" rewind with keepUndo 0 changed it after the target and kept no copy of it), and below
 * such a path wherever the rewind did not act (a path it restored or deleted, or one below a path it deleted, is as
 * at the target: the tape had a record of it from before that rewind). Other skips (a path a tool was handed
 * through a dangling link, recorded skipped) change nothing the tree shows.
 */
function withNotKept(
  wanted: Record<string, string>,
  now: Record<string, string>,
  changes: readonly ReportedChange[],
): Record<string, string> {
  const skipped = changes.filter((c) => c.action === "skip" && c.reason === "undo_not_kept");
  if (skipped.length === 0) return wanted;
  notKeptRewinds++;
  const atOrBelow = (path: string, root: string) => path === root || path.startsWith(`${root}/`);
  const actedOn = (path: string) =>
    changes.some((c) => (c.action === "delete" ? atOrBelow(path, c.path) : c.action === "restore" && c.path === path));
  const asNow = (path: string) => skipped.some((c) => path === c.path || (atOrBelow(path, c.path) && !actedOn(path)));
  const tree = Object.fromEntries(Object.entries(wanted).filter(([path]) => !asNow(path)));
  for (const [path, entry] of Object.entries(now)) if (asNow(path)) tree[path] = entry;
  return tree;
}

/** A step as one line, with the scripts the shell ran: what a failure names. */
function shown(workspace: string, s: Step): string {
  if (s.kind === "command") return `command: ${s.ops.map((op) => script(workspace, op)).join("; ")}`;
  return JSON.stringify(s);
}

it(`links to folders inside: commands, tools, rewinds and undos give whole trees (${RUNS} runs)`, async () => {
  console.log(
    `links-inside property: ${RUNS} runs, seed ${SEED}` +
      " (AGENT_TAPE_PROPERTY_RUNS or AGENT_TAPE_ROUNDS, AGENT_TAPE_PROPERTY_SEED)",
  );
  await fc.assert(
    fc.asyncProperty(start, fc.array(step, { minLength: 3, maxLength: 14 }), async (shape, steps) => {
      const base = await realpath(await tempDir("agent-tape-links-inside-"));
      const workspace = join(base, "ws");
      await makeWorkspace(workspace, shape);
      const store = openStore({ root: join(base, "sessions") });
      const checkpoints = new CheckpointStore(store);
      const tree = () => byteTreeOf(workspace);
      const done: string[] = []; // the steps so far, named in a failing expectation
      try {
        const { id } = await store.create({ workspace });
        const head = async () => (await store.get(id))!.lastSequence;
        const model = new Map<number, Record<string, string>>();
        let now = await tree();
        for (const [i, s] of steps.entries()) {
          done.push(shown(workspace, s));
          const said = done.join("\n  ");
          // A point to rewind to: the message before each step, with the tree as it is there.
          await store.append(id, { type: "message", payload: { role: "user", content: `step ${i}` } });
          model.set(await head(), now);
          if (s.kind === "command") {
            const text = s.ops.map((op) => script(workspace, op)).join("; ");
            await checkpoints.aroundCommand(id, { tool: "bash" }, () =>
              sh("/bin/sh", ["-c", text], { cwd: workspace }).catch(() => undefined),
            );
          } else if (s.kind === "tool") {
            await checkpoints.around(id, { tool: s.call.tool, paths: named(s.call) }, () => runTool(workspace, s.call));
          } else {
            const points = [...model.keys()];
            const differing = points.filter((point) => !isDeepStrictEqual(model.get(point), now));
            const from = s.anyPoint || differing.length === 0 ? points : differing;
            const target = from[s.pick % from.length]!;
            const headBefore = await head();
            const keepUndo = s.afterwards === "keep-no-undo" ? { keepUndo: 0 } : {};
            const report = await rewind(store, id, { toSequence: target, mode: s.mode, ...keepUndo });
            const rewound = withNotKept(model.get(target)!, now, report.changes);
            expect(await tree(), `rewound (${s.mode}) to #${target} after\n  ${said}`).toEqual(rewound);
            // A rewind to the head changes nothing and appends no marker: there is nothing to undo then.
            const undone = s.afterwards === "undo" && (await head()) !== headBefore;
            if (undone) {
              await undoRewind(store, id);
              expect(await tree(), `undid the rewind to #${target} after\n  ${said}`).toEqual(now);
            }
            // A rewind "all" cuts the events after its target; an undo appends them again under new numbers. Once
            // cut, what it left at paths it skipped (undo_not_kept) is all the tape says of them at the target.
            if (s.mode === "all") for (const point of points) if (point > target) model.delete(point);
            if (s.mode === "all" && !undone) model.set(target, rewound);
          }
          now = await tree();
          model.set(await head(), now);
        }
      } finally {
        checkpoints.close();
        await store.close();
        await sh("rm", ["-rf", base]);
      }
    }),
    { numRuns: RUNS, seed: SEED },
  );
  console.log(`links-inside property: ${notKeptRewinds} rewinds skipped paths as undo_not_kept`);
}, 600_000);
