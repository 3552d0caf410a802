// The code blocks of README.md and docs/guide.md, found, run as written and compared with the output the doc
// shows (docs/testing.md, "The docs' code blocks"). A block is run as its own module, imports and all, with a
// few lines before it (what the doc leaves to the reader: a workspace, a model, the session so far) and after it
// (what the doc prints from it); "agent-tape" in its imports is this repository's src/, as the examples do.
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { inspect } from "node:util";
import { afterEach, beforeAll, expect, it } from "vitest";

const repository = fileURLToPath(new URL("../..", import.meta.url));

export interface DocBlock {
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The fence's language: "ts", "sh", "json", or "" for output. */
  lang: string;
  text: string;
  /** The block's first line: how a test names the block it runs. */
  first: string;
  /** The prose between the previous block and this one. */
  before: string;
}

export function docBlocks(file: string): DocBlock[] {
  const lines = readFileSync(join(repository, file), "utf8").split("\n");
  const blocks: DocBlock[] = [];
  let prose: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)$/.exec(lines[i]!);
    if (!open) {
      prose.push(lines[i]!);
      continue;
    }
    const end = lines.findIndex((line, j) => j > i && line === "```");
    if (end < 0) throw new Error(`${file}:${i + 1}: a code block that is never closed`);
    const text = lines.slice(i + 1, end).join("\n");
    blocks.push({ file, line: i + 1, lang: open[1]!, text, first: lines[i + 1]!, before: prose.join("\n") });
    prose = [];
    i = end;
  }
  return blocks;
}

/** The example whose output an output block shows ("examples/x.ts … prints"), if the prose before it says so. */
export function exampleShown(block: DocBlock): string | undefined {
  const tail = block.before.trim().split("\n").slice(-3).join("\n");
  return /prints, in part:$/.test(tail) ? /\[examples\/([\w.-]+)\]/.exec(tail)?.[1] : undefined;
}

/** A README block included from an example file (`<!-- from examples/x.ts -->`, scripts/check-readme-snippets.mjs). */
export function includedFrom(block: DocBlock): string | undefined {
  return /<!-- from (examples\/[\w.-]+) -->$/.exec(block.before.trimEnd())?.[1];
}

/** How a test runs one code block. */
export interface BlockRun {
  /** The block's first line, as the doc has it. */
  first: string;
  /** Imports the lines before and after need (the block's own stay as written). */
  imports?: string;
  /** Code before the block: what the doc takes as given. `doc.state` holds what earlier blocks left. */
  before?: string;
  /** Code after the block: `doc.print(...)` what the doc shows, keep in `doc.state` what later blocks use. */
  after?: string;
  /** The block throws, and its last line's comment is the error's `code message`. */
  throws?: boolean;
  /** Checks what the block did, from what `after` kept in `doc.state`. */
  check?: (state: Record<string, unknown>) => void | Promise<void>;
}

interface DocGlobal {
  state: Record<string, unknown>;
  printed: string[];
  print(...values: unknown[]): void;
}

const docGlobal: DocGlobal = {
  state: {},
  printed: [],
  print(...values) {
    for (const value of values)
      this.printed.push(typeof value === "string" ? value : inspect(value, { depth: null, breakLength: Infinity }));
  },
};
(globalThis as { agentTapeDoc?: DocGlobal }).agentTapeDoc = docGlobal;

/** The state later blocks of a doc see (a tour's session, its store): starts empty. */
export const docState = docGlobal.state;

/** The block's imports name this repository's sources: "agent-tape" is src/index.ts, "agent-tape/x" an adapter. */
function fromSources(code: string): string {
  return code
    .replace(/"agent-tape"/g, JSON.stringify(join(repository, "src/index.ts")))
    .replace(/"agent-tape\/testing"/g, JSON.stringify(join(repository, "src/testing/index.ts")))
    .replace(/"agent-tape\/postgres"/g, JSON.stringify(join(repository, "src/backend/postgres/index.ts")))
    .replace(/"agent-tape\/backend"/g, JSON.stringify(join(repository, "src/backend/index.ts")))
    .replace(/"agent-tape\/([\w-]+)"/g, (_, name) => JSON.stringify(join(repository, `src/adapters/${name}/index.ts`)));
}

/**
 * Runs a block as a module in `folder` (in this process: vitest compiles it like a test file) and returns what
 * `doc.print` printed, or what it threw when `run.throws`.
 */
export async function runBlock(
  block: DocBlock,
  run: BlockRun,
  folder: string,
): Promise<{ printed: string; thrown?: unknown }> {
  const lines = block.text.split("\n");
  const importCount = lines.findIndex((line) => !line.startsWith("import ") && line.trim() !== "");
  const own = lines.slice(0, importCount < 0 ? lines.length : importCount).join("\n");
  const body = lines.slice(importCount < 0 ? lines.length : importCount).join("\n");
  const thrown = run.throws ? "let thrown: unknown;\ntry {\n" : "";
  const caught = run.throws ? "\n} catch (error) {\n  thrown = error;\n}\ndoc.state.thrown = thrown;" : "";
  const module = [
    fromSources(own),
    fromSources(run.imports ?? ""),
    "const doc = (globalThis as any).agentTapeDoc;",
    run.before ?? "",
    `${thrown}${body}${caught}`,
    run.after ?? "",
  ].join("\n");
  const file = join(folder, `block-${block.line}.ts`);
  await writeFile(file, module);
  docGlobal.printed.length = 0;
  delete docGlobal.state.thrown;
  await import(pathToFileURL(file).href);
  return { printed: docGlobal.printed.join("\n"), thrown: docGlobal.state.thrown };
}

// ---- comparing printed output with what a doc shows -------------------------------------------------------------
// Ids, times, temp paths and hashes differ on every run: each becomes a placeholder on both sides. `…` in a doc
// stands for anything; a program's output shown "in part" may skip lines.

const temp = new RegExp(String.raw`(?:/tmp|${tmpdir().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")})/[^/\s'",]+`, "g");

function placeholders(text: string): string {
  return text
    .replace(/\b[0-9A-HJKMNP-TV-Z]{26}\b/g, "<id>")
    .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, "<time>")
    .replace(temp, "<tmp>")
    .replace(/\b[0-9a-f]{8,64}\b/g, "<hex>");
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/…/g, ".*?");

/** A value the doc shows (an object as `console.log` prints it), whatever its line breaks: the whole of `printed`. */
export function expectValuesShown(printed: string, shown: string): void {
  const flat = (text: string) => placeholders(text).replace(/\s+/g, " ").trim();
  const pattern = new RegExp(`^${escaped(flat(shown))}$`);
  expect(flat(printed), `shown:\n${shown}`).toMatch(pattern);
}

/**
 * Lines the doc shows from a program's output ("prints, in part"): each in `printed`, in that order, other lines
 * between them allowed; spaces and the length of a heading's rule (`────`) aside.
 */
export function expectLinesShown(printed: string, shown: string): void {
  const lines = (text: string) =>
    placeholders(text)
      .split("\n")
      .map((line) => line.replace(/\s+/g, " ").replace(/─+/g, "─").trim())
      .filter((line) => line !== "" && line !== "...");
  const pattern = lines(shown)
    .map((line) => `${escaped(line)}\n`)
    .join(String.raw`(?:[^\n]*\n)*?`);
  expect(`\n${lines(printed).join("\n")}\n`, `shown:\n${shown}`).toMatch(new RegExp(`\n${pattern}`));
}
// ---- one test per block ----------------------------------------------------------------------------------------

/** The examples whose output test/examples/examples.process.test.ts compares with the blocks that show it. */
export const examplesCheckedAgainstDocs = ["ai-sdk.ts", "openai-agents.ts"];

export interface DocBlockPlan {
  /** The blocks this file runs, in the doc's order: later ones see what earlier ones left in `doc.state`. */
  runs: BlockRun[];
  /** Blocks not run here, by first line, each with why (not runnable by nature, or run elsewhere: which test). */
  notRun: Record<string, string>;
  /** Runs only some blocks: another test file accounts for the doc's every block. */
  partial?: boolean;
}

const isOutput = (block: DocBlock) => block.lang === "" || block.lang === "json";

/**
 * Registers the tests of one doc: that every block is accounted for, then one test per block it runs, which
 * fails when the block throws (unless it says it does) or prints other than the output block after it.
 */
export function describeDocBlocks(file: string, plan: DocBlockPlan, setUp: () => Promise<string>): void {
  const blocks = docBlocks(file);
  const runOf = new Map<DocBlock, BlockRun>();
  for (const run of plan.runs) {
    const block = blocks.find((b) => b.first === run.first && !runOf.has(b));
    if (block) runOf.set(block, run);
  }

  const accountFor = plan.partial ? () => undefined : it;
  accountFor("every code block is run here, included from an example that runs, or listed with why not", () => {
    const unaccounted = blocks.filter((block, i) => {
      if (runOf.has(block) || includedFrom(block) || plan.notRun[block.first] !== undefined) return false;
      if (!isOutput(block)) return true;
      const example = exampleShown(block);
      if (example) return !examplesCheckedAgainstDocs.includes(example);
      return !runOf.has(blocks[i - 1]!);
    });
    expect(unaccounted.map((b) => `${file}:${b.line} ${b.first}`)).toEqual([]);
    const stale = [
      ...plan.runs.filter((run) => ![...runOf.values()].includes(run)).map((run) => run.first),
      ...Object.keys(plan.notRun).filter((first) => !blocks.some((b) => b.first === first)),
    ];
    expect(stale, "entries naming no block of the doc").toEqual([]);
  });

  let folder = "";
  const cwd = process.cwd();
  beforeAll(async () => {
    // Test files may share this module (the unit tier does not isolate them): each doc starts from nothing.
    for (const key of Object.keys(docGlobal.state)) delete docGlobal.state[key];
    folder = await setUp();
  });
  afterEach(() => process.chdir(cwd));

  for (const [i, block] of blocks.entries()) {
    const run = runOf.get(block);
    if (!run) continue;
    const next = blocks[i + 1];
    const shown = next && isOutput(next) && !exampleShown(next) ? next : undefined;
    const printing = shown ? `, printing what ${file}:${shown.line} shows` : "";
    it(`${file}:${block.line} runs as written${printing}`, async () => {
      const { printed, thrown } = await runBlock(block, run, folder);
      if (run.throws) {
        const said = /\/\/ (.*)$/.exec(block.text.trim())?.[1];
        expect(thrown, "the block throws").toBeDefined();
        const { code, message } = thrown as { code: string; message: string };
        expect(`${code} ${message}`).toBe(said);
      }
      if (shown) {
        if (shown.lang === "json") expect(JSON.parse(printed)).toBeDefined();
        expectValuesShown(printed, shown.text);
      }
      await run.check?.(docGlobal.state);
    });
  }
}
