import { createHash, randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CheckpointStore, type SessionStore, isAgentTapeError } from "../../src/index.js";
import { cli } from "../cli/harness.js";
import { openStore, tempDir } from "../helpers/fixture.js";

// OS errors met by the store are STORAGE_FAILED with the OS code (`osCode`) and the OS
// error as `cause`, never raw. Each is made for real: a file where the store keeps a folder (ENOTDIR,
// EEXIST) and a folder where it keeps a file (EISDIR). EMFILE: fs-os-errors.process.test.ts.

function open(root: string): SessionStore {
  const store = openStore({ root });
  return store;
}

/** The STORAGE_FAILED a call fails with; anything else fails the test. */
async function storageFailure(promise: Promise<unknown>) {
  const error = await promise.then(
    () => expect.unreachable("the call succeeded"),
    (e: unknown) => e,
  );
  if (!isAgentTapeError(error, "STORAGE_FAILED")) throw error;
  const { osCode, cause } = error as unknown as { osCode: string; cause: NodeJS.ErrnoException };
  return { osCode, cause, message: error.message };
}

describe("OS errors are STORAGE_FAILED with the OS error as cause", () => {
  it("a file where the root folder should be: create (EEXIST), list and get (ENOTDIR)", async () => {
    const base = await tempDir();
    const root = join(base, "root");
    await writeFile(root, "not a folder");
    const store = open(root);
    const created = await storageFailure(store.create());
    expect(created.osCode).toBe("EEXIST");
    expect(created.cause.code).toBe("EEXIST");
    expect(created.message).toContain(root);
    expect((await storageFailure(store.list())).osCode).toBe("ENOTDIR");
    expect((await storageFailure(store.get("abc"))).osCode).toBe("ENOTDIR");
    expect((await storageFailure(open(join(root, "below")).create())).osCode).toBe("ENOTDIR");
    expect(await readFile(root, "utf8")).toBe("not a folder"); // nothing of the user's was touched
  });

  it("a file where a blob shard should be: the capture is ENOTDIR, and appends go on", async () => {
    const base = await tempDir();
    const workspace = join(base, "ws");
    await mkdir(workspace);
    await writeFile(join(workspace, "a.txt"), "hello");
    const store = open(join(base, "root"));
    const { id } = await store.create({ workspace });
    // sha256("hello") starts 2c: its shard is blobs/2c.
    await mkdir(join(base, "root", id, "blobs"), { recursive: true });
    await writeFile(join(base, "root", id, "blobs", "2c"), "in the way");
    const checkpoints = new CheckpointStore(store);
    const failed = await storageFailure(checkpoints.capture(id, { tool: "edit", paths: ["a.txt"] }));
    expect(failed.osCode).toBe("ENOTDIR");
    expect(failed.cause.code).toBe("ENOTDIR");
    await store.append(id, { type: "message", payload: { role: "user", content: "still writable" } });
    expect((await store.readAll(id)).map((e) => e.type)).toEqual(["message"]);
  });

  it("a folder where a side record should be: the capture is EISDIR", async () => {
    const base = await tempDir();
    const workspace = join(base, "ws");
    await mkdir(workspace);
    await writeFile(join(workspace, "a.txt"), "hello");
    const store = open(join(base, "root"));
    const { id } = await store.create({ workspace });
    await mkdir(join(base, "root", id, "records", "blobs-in-flight.json", "x"), { recursive: true });
    const failed = await storageFailure(new CheckpointStore(store).capture(id, { tool: "edit", paths: ["a.txt"] }));
    expect(failed.osCode).toBe("EISDIR");
    expect(failed.message).toContain("blobs-in-flight.json");
  });

  it("the CLI prints it with its code: a fork meeting a folder where a blob should be (EISDIR)", async () => {
    const base = await tempDir();
    const workspace = join(base, "ws");
    await mkdir(workspace);
    // Over 4 KiB and incompressible: a blob file of its own, not an entry of the pack (docs/format.md).
    const bytes = randomBytes(5000);
    await writeFile(join(workspace, "a.txt"), bytes);
    const root = join(base, "root");
    const store = open(root);
    const { id } = await store.create({ workspace });
    await new CheckpointStore(store).capture(id, { tool: "edit", paths: ["a.txt"] });
    await store.close();
    const hash = createHash("sha256").update(bytes).digest("hex");
    const shard = join(root, id, "blobs", hash.slice(0, 2));
    const [blob] = await readdir(shard);
    await rm(join(shard, blob!));
    await mkdir(join(shard, blob!));
    const forked = await cli(["fork", id, "--root", root]);
    expect(forked.code).toBe(1);
    expect(forked.stderr).toContain("(STORAGE_FAILED)");
    expect(forked.stderr).toContain("EISDIR");
    expect(forked.stderr).not.toContain("illegal operation on a directory"); // the raw text it once printed
  });
});
