import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultRoot } from "../../src/cli/default-root.js";
import { formatAge, formatBytes } from "../../src/cli/output.js";
import { commands } from "../../src/cli/run-cli.js";
import { cli, seedSession } from "./harness.js";
import { tempDir } from "../helpers/fixture.js";

const VERBS = ["list", "show", "rewind", "undo", "fork", "export", "gc", "verify", "repair"];

describe("help and version", () => {
  it("--help lists every verb, the --root default and the exit codes", async () => {
    const run = await cli(["--help"]);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    for (const verb of VERBS) expect(run.stdout).toMatch(new RegExp(`^  ${verb}\\b`, "m"));
    expect(run.stdout).toContain(
      "$AGENT_TAPE_ROOT, else\n                 " +
        "$XDG_DATA_HOME/agent-tape/sessions, else ~/.local/share/agent-tape/sessions",
    );
    expect(run.stdout).toContain(
      "Exit codes:\n  0  success\n  1  problems found (verify), or the operation failed\n  2  usage error",
    );
  });

  it("each verb has its own --help, also reachable as `help <verb>`", async () => {
    expect(commands.map((c) => c.name)).toEqual(VERBS);
    for (const verb of VERBS) {
      const run = await cli([verb, "--help"]);
      expect(run.code, verb).toBe(0);
      expect(run.stdout.startsWith(`Usage: agent-tape ${verb}`), verb).toBe(true);
      expect(run.stdout, verb).toContain("--root <dir>");
      expect(run.stdout, verb).toContain("Exit codes:");
      expect((await cli(["help", verb])).stdout).toBe(run.stdout);
    }
    expect((await cli(["rewind", "--help"])).stdout).toContain("--mode <mode>");
  });

  it("--version prints package.json's version", async () => {
    const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8"));
    expect(await cli(["--version"])).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: "" });
  });
});

describe("usage errors exit 2", () => {
  it("no command prints the help on stderr", async () => {
    const run = await cli([]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain("Usage: agent-tape <command>");
  });

  it("an unknown command, an unknown option, a missing id, an extra argument", async () => {
    const { root, id } = await seedSession();
    const cases: [string[], RegExp][] = [
      [["rewnd", id, "--to", "1"], /Unknown command "rewnd"/],
      [["list", "--colour"], /`list` has no option --colour/],
      [["show"], /`show` needs a session id/],
      [["show", id, "extra"], /Unexpected argument "extra"/],
      [["show", id, "--from", "4", "--to", "2"], /--from 4 is after --to 2/],
      [["verify", id, id], /give one session id or none/],
      [["list", "--root="], /--root needs a folder/],
    ];
    for (const [args, message] of cases) {
      const run = await cli([...args, ...(args.includes("--root=") ? [] : ["--root", root])]);
      expect(run.code, args.join(" ")).toBe(2);
      expect(run.stderr, args.join(" ")).toMatch(message);
      expect(run.stdout, args.join(" ")).toBe("");
    }
  });

  it("an unsafe session id is a usage error, named by its code", async () => {
    const { root } = await seedSession();
    const run = await cli(["show", "../etc", "--root", root]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("(INVALID_SESSION_ID)");
  });

  it("with --json, errors go to stderr as JSON", async () => {
    const { root } = await seedSession();
    const usage = await cli(["show", "--json", "--root", root]);
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stderr)).toEqual({
      error: { code: "USAGE", message: "`show` needs a session id (see `agent-tape list`)." },
    });
    const failed = await cli(["show", "nope", "--json", "--root", root]);
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stderr).error.code).toBe("SESSION_NOT_FOUND");
  });
});

describe("the store root", () => {
  it("defaults to $AGENT_TAPE_ROOT, else $XDG_DATA_HOME/agent-tape/sessions, else ~/.local/share/…", () => {
    expect(defaultRoot({ AGENT_TAPE_ROOT: "/data/tapes", XDG_DATA_HOME: "/xdg", HOME: "/home/me" })).toBe(
      "/data/tapes",
    );
    expect(defaultRoot({ XDG_DATA_HOME: "/xdg", HOME: "/home/me" })).toBe("/xdg/agent-tape/sessions");
    expect(defaultRoot({ XDG_DATA_HOME: "relative/is/ignored", HOME: "/home/me" })).toBe(
      "/home/me/.local/share/agent-tape/sessions",
    );
    expect(defaultRoot({ HOME: "/home/me" })).toBe("/home/me/.local/share/agent-tape/sessions");
  });

  it("is taken from the environment when --root is not given", async () => {
    const { root, id } = await seedSession();
    const viaEnv = await cli(["list", "--json"], { env: { AGENT_TAPE_ROOT: root } });
    expect(JSON.parse(viaEnv.stdout).map((s: { id: string }) => s.id)).toEqual([id]);
    const xdg = join(await tempDir(), "xdg");
    const viaXdg = await cli(["list"], { env: { XDG_DATA_HOME: xdg } });
    expect(viaXdg.stdout).toBe(`No sessions under ${join(xdg, "agent-tape", "sessions")}.\n`);
  });

  it("--root may come before or after the verb", async () => {
    const { root, id } = await seedSession();
    const before = await cli(["--root", root, "show", id]);
    const after = await cli(["show", id, "--root", root]);
    expect(before.code).toBe(0);
    expect(before.stdout).toBe(after.stdout);
  });
});

describe("output helpers", () => {
  it("sizes in binary units and ages relative to now", () => {
    expect([
      formatBytes(0),
      formatBytes(1023),
      formatBytes(1536),
      formatBytes(5 * 1024 * 1024),
      formatBytes(300 * 1024 * 1024),
    ]).toEqual(["0 B", "1023 B", "1.5 KiB", "5.0 MiB", "300 MiB"]);
    const now = new Date("2025-03-10T12:00:00Z");
    const ago = (seconds: number) => formatAge(new Date(now.getTime() - seconds * 1000), now);
    expect([ago(1), ago(42), ago(5 * 60), ago(3 * 3600), ago(3 * 86400), ago(90 * 86400)]).toEqual([
      "just now",
      "42s ago",
      "5m ago",
      "3h ago",
      "3d ago",
      "2024-12-10",
    ]);
  });
});
