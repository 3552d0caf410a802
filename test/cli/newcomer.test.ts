// The path a newcomer takes: ids typed by a prefix, a mistyped --root, an unknown option,
// a session that is not there. Each answer is the CLI's own, in the user's words, with the right exit code.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, seedSession, withStore } from "./harness.js";
import { tempDir } from "../helpers/fixture.js";

describe("a session id may be given by a unique prefix", () => {
  it("show, rewind and verify accept the first characters of an id, in either case", async () => {
    const { root, id } = await seedSession();
    const full = await cli(["show", id, "--root", root]);
    expect(full.code).toBe(0);
    expect(await cli(["show", id.slice(0, 6), "--root", root])).toEqual(full);
    expect(await cli(["show", id.slice(0, 6).toLowerCase(), "--root", root])).toEqual(full);
    const verified = await cli(["verify", id.slice(0, 8), "--root", root]);
    expect(verified.code).toBe(0);
    expect(verified.stdout).toContain(id);
    const rewound = await cli(["rewind", id.slice(0, 10), "--to", "1", "--dry-run", "--root", root]);
    expect(rewound.code).toBe(0);
    expect(rewound.stdout).toContain(`rewinding ${id} to #1`);
  });

  it("a prefix several sessions share is a usage error naming them; an exact id wins over a longer one", async () => {
    const root = await tempDir();
    await withStore(root, async (store) => {
      for (const id of ["job-1", "job-10", "job-2"]) await store.create({ id });
    });
    const run = await cli(["show", "job", "--root", root]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('"job" matches 3 sessions: job-1, job-10, job-2. Give more of the id.');
    expect((await cli(["show", "job-1", "--root", root])).code).toBe(0);
    expect((await cli(["show", "job-2", "--root", root])).code).toBe(0);
  });

  it("an unknown id is reported in the CLI's words, without advice meant for library code", async () => {
    const { root } = await seedSession();
    const run = await cli(["show", "01ZZZZ", "--root", root]);
    expect(run.code).toBe(1);
    expect(run.stderr).not.toContain("store.create()");
    expect(run.stderr).toBe(
      `agent-tape: no session "01ZZZZ" under ${root} (SESSION_NOT_FOUND)\n` +
        `Run \`agent-tape --root ${root} list\` to see the sessions there.\n`,
    );
  });
});

describe("--root that does not exist", () => {
  it("is a usage error (exit 2) for list, verify and gc, naming the folder", async () => {
    const missing = join(await tempDir(), "no-such-folder");
    for (const verb of ["list", "verify", "gc"]) {
      const run = await cli([verb, "--root", missing]);
      expect(run.code, verb).toBe(2);
      expect(run.stdout, verb).toBe("");
      expect(run.stderr, verb).toContain(`--root ${missing} does not exist`);
    }
  });

  it("an existing empty root is no error", async () => {
    const empty = join(await tempDir(), "empty");
    await mkdir(empty);
    expect(await cli(["list", "--root", empty])).toMatchObject({ code: 0, stdout: `No sessions under ${empty}.\n` });
  });
});

describe("option errors are the CLI's own words", () => {
  it("an unknown option names the verb's options; a missing value and a value given to a flag say so", async () => {
    const { root, id } = await seedSession();
    const unknown = await cli(["list", "--colour", "--root", root]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      "agent-tape: `list` has no option --colour. Its options: --root, --store, --json, --help, --version.\n" +
        "Run `agent-tape list --help` for usage.\n",
    );
    const missing = await cli(["show", id, "--root", root, "--from"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("agent-tape: --from needs a value.\n");
    const flagValue = await cli(["show", id, "--root", root, "--json=yes"]);
    expect(flagValue.code).toBe(2);
    expect(flagValue.stderr).toContain("agent-tape: --json takes no value.\n");
    for (const run of [unknown, missing, flagValue]) {
      expect(run.stderr).not.toMatch(/To specify a positional argument|ERR_PARSE_ARGS|'--/);
    }
  });
});
