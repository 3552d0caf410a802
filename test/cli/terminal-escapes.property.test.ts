// Terminal control sequences from the tape and the workspace (a session's title, a message, a tool's name,
// a file's name and its content) never reach the terminal from `list`, `show`, `show --diff`, `rewind` and
// `undo`: they are shown as visible escapes, and `--json` keeps every string exact. Generated inputs mix
// C0 and C1 controls, ESC sequences (window title, clipboard, clear screen, colours), DEL and bidi overrides
// with plain text. Rounds: AGENT_TAPE_ROUNDS (default 12; the soak tier raises it), seed printed on failure.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CheckpointStore } from "../../src/index.js";
import { cli } from "./harness.js";
import { rounds } from "../helpers/rounds.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const ROUNDS = rounds(12, 100);
const NOW = new Date("2030-01-01T00:00:00Z");

/** What a terminal acts on: C0 but newline and tab, DEL, C1, and the bidi controls that reorder a line. */
const STEERING = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

const hostilePiece = fc.oneof(
  fc.constantFrom(
    "\x1b]0;owned title\x07", // window title
    "\x1b]52;c;b3duZWQ=\x07", // clipboard write
    "\x1b[2J\x1b[H", // clear screen
    "\x1b[3J",
    "\x1bc", // full reset
    "\x1b[31m",
    "\x1b[8m", // hidden text
    "\x9b2J", // C1 CSI
    "\x9d0;t\x9c", // C1 OSC
    "\r",
    "\x08\x08",
    "\x7f",
    "\u202e",
    "\u2066",
    "\u200f",
  ),
  fc.string({ unit: fc.integer({ min: 0, max: 0x9f }).map((c) => String.fromCharCode(c)), maxLength: 6 }),
  fc.string({ maxLength: 6 }),
);
const hostile = fc.array(hostilePiece, { minLength: 1, maxLength: 6 }).map((parts) => parts.join(""));

/** A file name the file system takes: no "/" or NUL, not "." or "..", at most 200 bytes. */
function fileName(text: string): string {
  let name = `f-${text.replace(/[/\0]/g, "_")}`;
  while (Buffer.byteLength(name) > 200) name = name.slice(0, -1);
  return name;
}

async function session(title: string, text: string) {
  const base = await tempDir("agent-tape-escapes-");
  const root = join(base, "root");
  const workspace = join(base, "ws");
  await mkdir(workspace);
  const name = fileName(text);
  await writeFile(join(workspace, name), `before ${text}\n`);
  const store = openStore({ root });
  try {
    const { id } = await store.create({ title, workspace });
    await store.append(id, { type: "message", payload: { role: "user", content: text } });
    await store.append(id, { type: "tool_call", payload: { callId: "c1", name: `t${text}`, input: { path: name } } });
    await new CheckpointStore(store).around(id, { tool: `t${text}`, paths: [name], callId: "c1" }, () =>
      writeFile(join(workspace, name), `after ${text}\n`),
    );
    await store.append(id, { type: "tool_result", payload: { callId: "c1", output: text } });
    return { root, id, name };
  } finally {
    await store.close();
  }
}

/** One command, run twice on copies of the same state: piped (no colour) and at a colour terminal. */
async function both(args: string[]) {
  const plain = await cli(args, { now: () => NOW });
  const colour = await cli(args, { now: () => NOW, isTTY: { stdout: true, stderr: false } as never, env: {} });
  return { plain, colour };
}

function expectNoSteering(where: string, text: string): void {
  const found = text.match(STEERING);
  expect(found, `${where}: ${JSON.stringify(found?.[0])} reached the terminal in ${JSON.stringify(text)}`).toBeNull();
}

describe("terminal control sequences from the tape and the workspace", () => {
  it("are shown as visible escapes by list, show, show --diff, rewind and undo; --json stays exact", async () => {
    await fc.assert(
      fc.asyncProperty(hostile, hostile, async (title, text) => {
        const s = await session(title, text);
        const outputs: [string, { stdout: string; stderr: string }][] = [];
        const run = async (args: string[]) => {
          const { plain, colour } = await both([...args, "--root", s.root]);
          expect(plain.code, `${args.join(" ")}: ${plain.stderr}`).toBe(0);
          outputs.push([`${args[0]} (piped)`, plain]);
          // Colour is the CLI's own: take its SGR codes away and what is left is the piped text, so no
          // sequence of the tape's came through as colour either.
          const uncoloured = colour.stdout.replace(/\x1b\[[0-9;]*m/g, "");
          expect(uncoloured, `${args.join(" ")} at a colour terminal`).toBe(plain.stdout);
          outputs.push([`${args[0]} (colour, SGR removed)`, { stdout: uncoloured, stderr: colour.stderr }]);
          return plain;
        };
        await run(["list"]);
        await run(["show", s.id]);
        await run(["show", s.id, "--diff"]);
        await run(["rewind", s.id, "--to", "2", "--yes", "--dry-run"]);
        // The rewind and the undo change the store: each runs once, piped, then once more at a colour
        // terminal on the state the first left (a rewind again, an undo again) would not be the same command.
        const rewound = await cli(["rewind", s.id, "--to", "2", "--yes", "--diff", "--root", s.root], {
          now: () => NOW,
        });
        expect(rewound.code, rewound.stderr).toBe(0);
        outputs.push(["rewind", rewound]);
        const undone = await cli(["undo", s.id, "--diff", "--root", s.root], { now: () => NOW });
        expect(undone.code, undone.stderr).toBe(0);
        outputs.push(["undo", undone]);
        for (const [where, out] of outputs) {
          expectNoSteering(`${where} stdout`, out.stdout);
          expectNoSteering(`${where} stderr`, out.stderr);
        }

        // --json: the strings exactly as stored.
        const listed = JSON.parse((await cli(["list", "--json", "--root", s.root])).stdout);
        expect(listed.find((l: { id: string }) => l.id === s.id).title).toBe(title);
        const shown = (await cli(["show", s.id, "--json", "--root", s.root])).stdout;
        const events = shown
          .trim()
          .split("\n")
          .map((line) => JSON.parse(line));
        expect(events.flat().find((e: { type: string }) => e.type === "message").payload.content).toBe(text);
      }),
      { numRuns: ROUNDS },
    );
  }, 600_000);
});
