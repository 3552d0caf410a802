import { readFile, readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, seedSession, withStore } from "./harness.js";

const HAND_EDIT = "two + a line typed by hand\n";

/**
 * The seeded session (a.txt "one" -> "two", b.txt created by call c1; its after-state is #4), then a.txt
 * edited by hand: a rewind to #2 would roll the hand edit back with the agent's.
 */
async function handEdited() {
  const seeded = await seedSession({ afterState: true });
  await writeFile(join(seeded.workspace, "a.txt"), HAND_EDIT);
  const read = (path: string) => readFile(join(seeded.workspace, path), "utf8");
  const sequences = () =>
    withStore(seeded.root, async (store) => (await store.readAll(seeded.id)).map((e) => e.sequence));
  return { ...seeded, read, sequences };
}

/** A person at a terminal who answers `answer` (after doing `meanwhile`), and the questions they saw. */
function person(answer: string, meanwhile: () => Promise<void> = async () => undefined) {
  const questions: string[] = [];
  return {
    questions,
    ask: async (question: string) => {
      questions.push(question);
      await meanwhile();
      return answer;
    },
  };
}

describe("agent-tape rewind: paths changed outside the session since it wrote them", () => {
  it("piped, with no choice: refuses (exit 1) with REWIND_CONFLICT listing them; nothing changes", async () => {
    const t = await handEdited();
    const run = await cli(["rewind", t.id, "--to", "2", "--root", t.root]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("a.txt (modified)");
    expect(run.stderr).toContain("(REWIND_CONFLICT)");
    expect(run.stderr).toContain("--on-conflict skip");
    expect(run.stderr).toContain("--on-conflict overwrite");
    expect(run.stdout).toBe("");
    expect(await t.read("a.txt")).toBe(HAND_EDIT);
    expect(await readdir(t.workspace)).toContain("b.txt");
    expect(await t.sequences()).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("--json, piped: the error names the code and carries the conflicts", async () => {
    const t = await handEdited();
    const run = await cli(["rewind", t.id, "--to", "2", "--json", "--root", t.root]);
    expect(run.code).toBe(1);
    const { error } = JSON.parse(run.stderr) as { error: { code: string; conflicts: { path: string }[] } };
    expect(error.code).toBe("REWIND_CONFLICT");
    expect(error.conflicts.map((c) => c.path)).toEqual(["a.txt"]);
  });

  it("--dry-run prints each conflict with what changed, and what a real rewind would do", async () => {
    const t = await handEdited();
    const run = await cli(["rewind", t.id, "--to", "2", "--dry-run", "--root", t.root]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(
      "Changed outside this session since it last wrote them (a rewind refuses without --on-conflict):\n" +
        "  a.txt  modified\n",
    );
    expect(await t.read("a.txt")).toBe(HAND_EDIT);
  });

  it("--dry-run --on-conflict skip shows the path skipped, with the reason", async () => {
    const t = await handEdited();
    const run = await cli(["rewind", t.id, "--to", "2", "--dry-run", "--on-conflict", "skip", "--root", t.root]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^ {2}skip +a\.txt +\(conflict: modified since agent-tape wrote it\)$/m);
    expect(run.stdout).toContain("Changed outside this session since it last wrote them (left as they are):\n");
  });

  it("--on-conflict skip leaves the hand-edited file and rewinds the rest", async () => {
    const t = await handEdited();
    const run = await cli(["rewind", t.id, "--to", "2", "--on-conflict", "skip", "--root", t.root]);
    expect(run.code).toBe(0);
    expect(await t.read("a.txt")).toBe(HAND_EDIT);
    expect(await readdir(t.workspace)).not.toContain("b.txt");
    expect(run.stdout).toContain("Changed outside this session since it last wrote them (left as they are):\n");
  });

  it("--on-conflict overwrite, piped: overwrites without asking; undo brings the hand edit back", async () => {
    const t = await handEdited();
    const run = await cli(["rewind", t.id, "--to", "2", "--on-conflict", "overwrite", "--root", t.root]);
    expect(run.code).toBe(0);
    expect(await t.read("a.txt")).toBe("one\n");
    expect(run.stdout).toContain("Changed outside this session since it last wrote them (overwritten; undo");
    const undo = await cli(["undo", t.id, "--root", t.root]);
    expect(undo.code).toBe(0);
    expect(await t.read("a.txt")).toBe(HAND_EDIT);
  });

  it("is a usage error (exit 2) for an unknown --on-conflict", async () => {
    const t = await handEdited();
    const run = await cli(["rewind", t.id, "--to", "2", "--on-conflict", "merge", "--root", t.root]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--on-conflict is refuse, skip or overwrite, not "merge"');
  });
});

describe("agent-tape rewind at a terminal: asks before overwriting", () => {
  it("lists the conflicts and asks; 'y' overwrites", async () => {
    const t = await handEdited();
    const you = person("y");
    const run = await cli(["rewind", t.id, "--to", "2", "--root", t.root], { ask: you.ask });
    expect(you.questions).toHaveLength(1);
    expect(you.questions[0]).toMatch(/Overwrite.*\[y\/N\]/);
    expect(run.stderr).toContain("Changed outside this session since it last wrote them:\n  a.txt  modified\n");
    expect(run.code).toBe(0);
    expect(await t.read("a.txt")).toBe("one\n");
    expect(await readdir(t.workspace)).not.toContain("b.txt");
  });

  it("a conflicting file too big for the undo: the question shows it lost for good, not 'into the undo'", async () => {
    const t = await handEdited();
    await writeFile(join(t.workspace, "a.txt"), Buffer.alloc(6 * 1000 * 1000, 1)); // over the undo's 5 MiB
    const you = person("n");
    const args = ["rewind", t.id, "--to", "2", "--allow-unrecoverable", "--root", t.root];
    const run = await cli(args, { ask: you.ask });
    expect(run.stderr).toContain("Would be lost for good (no copy kept for undo; needs --allow-unrecoverable):\n");
    expect(run.stderr).toContain("  a.txt (too_large)\n");
    expect(you.questions).toEqual([expect.stringMatching(/except what is listed as lost for good.*\[y\/N\]/)]);
    expect(run.code).toBe(1);
    expect((await readFile(join(t.workspace, "a.txt"))).length).toBe(6 * 1000 * 1000);
  });

  it("a conflicting file too big to compare, answered yes: overwritten as shown, reported lost for good", async () => {
    const t = await handEdited();
    await writeFile(join(t.workspace, "a.txt"), Buffer.alloc(6 * 1000 * 1000, 1)); // over the undo's 5 MiB
    const you = person("y");
    const run = await cli(["rewind", t.id, "--to", "2", "--allow-unrecoverable", "--root", t.root], { ask: you.ask });
    expect(you.questions).toHaveLength(1);
    expect(run.stderr).not.toContain("REWIND_CONFLICT");
    expect(run.code).toBe(0);
    expect(await t.read("a.txt")).toBe("one\n");
  });

  it("anything but yes (here: Enter) changes nothing and exits 1", async () => {
    const t = await handEdited();
    const you = person("");
    const run = await cli(["rewind", t.id, "--to", "2", "--root", t.root], { ask: you.ask });
    expect(you.questions).toHaveLength(1);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("Nothing was changed");
    expect(await t.read("a.txt")).toBe(HAND_EDIT);
    expect(await t.sequences()).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("--on-conflict overwrite still asks at a terminal; --yes does not ask", async () => {
    const t = await handEdited();
    const no = person("n");
    const asked = await cli(["rewind", t.id, "--to", "2", "--on-conflict", "overwrite", "--root", t.root], no);
    expect(no.questions).toHaveLength(1);
    expect(asked.code).toBe(1);
    expect(await t.read("a.txt")).toBe(HAND_EDIT);

    const quiet = person("n");
    const run = await cli(["rewind", t.id, "--to", "2", "--yes", "--root", t.root], quiet);
    expect(quiet.questions).toEqual([]);
    expect(run.code).toBe(0);
    expect(await t.read("a.txt")).toBe("one\n");
  });

  it("--on-conflict skip, a dry run, or no conflict at all: no question", async () => {
    const t = await handEdited();
    const you = person("y");
    await cli(["rewind", t.id, "--to", "2", "--dry-run", "--root", t.root], you);
    expect(you.questions).toEqual([]);
    await writeFile(join(t.workspace, "a.txt"), "two\n"); // the hand edit taken back: no conflict left
    const run = await cli(["rewind", t.id, "--to", "2", "--root", t.root], you);
    expect(you.questions).toEqual([]);
    expect(run.code).toBe(0);

    const s = await handEdited();
    const skip = await cli(["rewind", s.id, "--to", "2", "--on-conflict", "skip", "--root", s.root], you);
    expect(you.questions).toEqual([]);
    expect(skip.code).toBe(0);
    expect(await s.read("a.txt")).toBe(HAND_EDIT);
  });

  it("a file edited while the question is up is not overwritten: refused, REWIND_CONFLICT naming it", async () => {
    const t = await handEdited();
    const you = person("y", () => writeFile(join(t.workspace, "b.txt"), "typed while asked\n"));
    const run = await cli(["rewind", t.id, "--to", "2", "--root", t.root], you);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("b.txt (modified)");
    expect(run.stderr).toContain("(REWIND_CONFLICT)");
    expect(await t.read("a.txt")).toBe(HAND_EDIT);
    expect(await t.read("b.txt")).toBe("typed while asked\n");
  });
});

describe("agent-tape rewind at a terminal: the tape the person was shown", () => {
  it("an event appended while the question is up: refused with SEQUENCE_CONFLICT, nothing changes", async () => {
    const t = await handEdited();
    const you = person("y", () =>
      withStore(t.root, async (store) => {
        await store.append(t.id, { type: "message", payload: { role: "user", content: "typed while asked" } });
      }),
    );
    const run = await cli(["rewind", t.id, "--to", "2", "--root", t.root], you);
    expect(you.questions.length).toBe(1);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("(SEQUENCE_CONFLICT)");
    expect(run.stderr).toContain("#7, not #6");
    expect(await t.read("a.txt")).toBe(HAND_EDIT);
    expect(await t.sequences()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });
});

describe("agent-tape rewind --before-call", () => {
  it("goes back to just before the tool call with that id", async () => {
    const { root, workspace, id } = await seedSession({ afterState: true });
    const run = await cli(["rewind", id, "--before-call", "c1", "--root", root]);
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Rewound ${id} to #1 (mode all):`);
    expect(await readFile(join(workspace, "a.txt"), "utf8")).toBe("one\n");
    expect(await withStore(root, async (store) => (await store.readAll(id)).map((e) => e.sequence))).toEqual([1, 7]);
  });

  it("is a usage error with --to as well, or with neither", async () => {
    const { root, id } = await seedSession();
    const both = await cli(["rewind", id, "--to", "2", "--before-call", "c1", "--root", root]);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("either --to <seq> or --before-call <toolCallId>");
    const neither = await cli(["rewind", id, "--root", root]);
    expect(neither.code).toBe(2);
  });

  it("fails (exit 2) for a call id not on the tape, naming it", async () => {
    const { root, id } = await seedSession();
    const run = await cli(["rewind", id, "--before-call", "nope", "--root", root]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('No tool call "nope"');
  });
});

describe("agent-tape undo: a path edited by hand after the rewind", () => {
  async function rewoundThenEdited() {
    const t = await handEdited();
    await writeFile(join(t.workspace, "a.txt"), "two\n"); // no conflict for the rewind itself
    expect((await cli(["rewind", t.id, "--to", "2", "--root", t.root])).code).toBe(0);
    await writeFile(join(t.workspace, "a.txt"), "one + typed after the rewind\n");
    return t;
  }

  it("is refused (exit 1, REWIND_CONFLICT); --on-conflict skip and overwrite are the choices", async () => {
    const t = await rewoundThenEdited();
    const refused = await cli(["undo", t.id, "--root", t.root]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("a.txt (modified)");
    expect(refused.stderr).toContain("--on-conflict skip");
    expect(await t.read("a.txt")).toBe("one + typed after the rewind\n");

    const skipped = await cli(["undo", t.id, "--on-conflict", "skip", "--root", t.root]);
    expect(skipped.code).toBe(0);
    expect(skipped.stdout).toContain("Changed outside this session since it last wrote them (left as they are):");
    expect(await t.read("a.txt")).toBe("one + typed after the rewind\n");
    expect(await t.read("b.txt")).toBe("new file\n");
  });

  it("--on-conflict overwrite puts the rewound-away content back over the edit", async () => {
    const t = await rewoundThenEdited();
    const run = await cli(["undo", t.id, "--on-conflict", "overwrite", "--root", t.root]);
    expect(run.code).toBe(0);
    expect(await t.read("a.txt")).toBe("two\n");
  });
});
