import { execFileSync } from "node:child_process";
import { mkdir, realpath } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { CheckpointStore, forkIntoWorkspace } from "../../src/index.js";
import { nameFromBytes } from "../../src/core/byte-names.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// The workspace's own name reaches every file call as bytes (docs/ARCHITECTURE.md, "Names and depths"): a folder
// named `ws-\xff` is a workspace like any other, and a fork into a folder so named counts what it copied, at any
// depth. Before, `create` stat-ed the name as text (the byte became U+FFFD: INVALID_ARGUMENT, "create it first"),
// and the fork's count listed folders by their whole path (ENAMETOOLONG past PATH_MAX, after the copy).

let base = "";
afterEach(async () => {
  if (base !== "") execFileSync("rm", ["-rf", base]); // GNU rm goes to any depth
});

/** `<base>/<name>-\xff` as the library names it (the byte 0xff is not UTF-8). */
const bad = (name: string) => nameFromBytes(Buffer.from(`${base}/${name}-\xff`, "latin1"));
/** 40 folders of 120 bytes (past PATH_MAX) with a file at the bottom, made in `<base>/<name>-\xff`. */
const deepTree = (name: string) =>
  `cd "$(printf '${name}-\\377')" && mkdir top && cd top && for i in $(seq 40); do ` +
  `mkdir ${"d".repeat(116)}$i && cd -P ${"d".repeat(116)}$i; done && echo bottom > f`;

it("a workspace with a non-UTF-8 byte in its name is created on; a fork into one counts a deep tree", async () => {
  base = await realpath(await tempDir("agent-tape-ws-names-"));
  const workspace = bad("ws");
  await mkdir(Buffer.from(`${base}/ws-\xff`, "latin1"));
  const store = openStore({ root: join(base, "sessions") });
  try {
    const { id } = await store.create({ workspace });
    expect((await store.get(id))!.workspace).toBe(workspace);
    await store.append(id, { type: "message", payload: { role: "user", content: "start" } });
    await new CheckpointStore(store).aroundCommand(id, { tool: "bash" }, () =>
      execFileSync("sh", ["-c", deepTree("ws")], { cwd: base, stdio: "ignore" }),
    );
    const fork = await forkIntoWorkspace(store, id, { workspace: bad("fork") });
    expect(fork.workspace).toBe(bad("fork"));
    expect({ files: fork.files, folders: fork.folders }).toEqual({ files: 1, folders: 41 });
  } finally {
    await store.close();
  }
});
