// Reading a blob no further than its snapshot recorded (docs/ARCHITECTURE.md, "Blobs"): a blob file that
// claims more (a compression bomb), a raw file longer than recorded, and the streamed digest `verify` uses,
// against the whole read on compressed, raw and marker look-alike blobs.
import { createHash, randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { deflateRawSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { isAgentTapeError } from "../../src/index.js";
import { fsBackend, memoryBackend } from "../../src/backend/index.js";
import { readVerifiedBlob } from "../../src/blobs/store-then-reference.js";
import { openStore, tempDir } from "../helpers/fixture.js";

const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

function header(method: number, length: number): Buffer {
  const head = Buffer.from([0x00, 0x61, 0x74, 0x7a, method, 0, 0, 0, 0, 0, 0]);
  head.writeUIntBE(length, 5, 6);
  return head;
}

async function session() {
  const root = join(await tempDir("agent-tape-caps-"), "root");
  const backend = fsBackend({ root });
  const store = openStore({ backend });
  const { id } = await store.create({});
  const plant = async (hash: string, bytes: Buffer) => {
    await mkdir(join(root, id, "blobs", hash.slice(0, 2)), { recursive: true });
    await writeFile(join(root, id, "blobs", hash.slice(0, 2), hash), bytes);
  };
  return { backend, id, plant };
}

describe("a blob read with the length its snapshot recorded", () => {
  it("inflates no further than recorded, whatever the file claims", async () => {
    const { backend, id, plant } = await session();
    const zeros = Buffer.alloc(8 * 1024 * 1024);
    const hash = sha256("four");
    await plant(hash, Buffer.concat([header(1, zeros.length), deflateRawSync(zeros)]));
    const read = await backend.readBlob(id, hash, { maxBytes: 4 });
    expect(read!.length).toBeLessThanOrEqual(5); // the raw prefix, not 8 MiB of zeros
    const refused = await readVerifiedBlob(backend, id, hash, { bytes: 4 }).catch((e) => e);
    expect(isAgentTapeError(refused, "BLOB_CORRUPT")).toBe(true);
    const digest = await backend.digestBlob!(id, hash, { maxBytes: 4 });
    expect(digest!.bytes).toBeLessThanOrEqual(5);
  });

  it("refuses a raw file longer than recorded after reading one byte more, and one shorter", async () => {
    const { backend, id, plant } = await session();
    const content = randomBytes(1000);
    const hash = sha256(content);
    await plant(hash, content);
    expect((await backend.readBlob(id, hash, { maxBytes: 10 }))!.length).toBe(11);
    for (const bytes of [10, 2000]) {
      const refused = await readVerifiedBlob(backend, id, hash, { bytes }).catch((e) => e);
      expect(isAgentTapeError(refused, "BLOB_CORRUPT"), `recorded ${bytes}`).toBe(true);
    }
    expect(await readVerifiedBlob(backend, id, hash, { bytes: 1000 })).toEqual(content);
  });

  it("the streamed digest agrees with the whole read: compressed, raw, stored and look-alike blobs", async () => {
    const { backend, id, plant } = await session();
    const text = Buffer.from("export const x = 1;\n".repeat(5000));
    const lookAlike = Buffer.concat([header(1, 50), randomBytes(200)]); // begins with the marker, does not inflate
    const stored = Buffer.concat([header(0, 300), randomBytes(300)]);
    const cases: [string, Buffer, Buffer][] = [
      ["compressed", text, Buffer.concat([header(1, text.length), deflateRawSync(text)])],
      ["raw", randomBytes(300_000), Buffer.alloc(0)],
      ["stored", stored.subarray(11), stored],
      ["look-alike", lookAlike, lookAlike],
      ["empty", Buffer.alloc(0), Buffer.alloc(0)],
    ];
    for (const [name, content, file] of cases) {
      const hash = sha256(content);
      await plant(hash, file.length > 0 || name === "empty" ? file : content);
      expect(await backend.digestBlob!(id, hash), name).toEqual({ sha256: hash, bytes: content.length });
      expect(await readVerifiedBlob(backend, id, hash, { bytes: content.length }), name).toEqual(content);
    }
    expect(await backend.digestBlob!(id, sha256("none"))).toBeUndefined();
  });

  it("the memory backend cuts a longer blob the same way", async () => {
    const store = openStore({ backend: memoryBackend() });
    const { id } = await store.create({});
    const locked = await store.backend.lock(id);
    const content = Buffer.from("0123456789");
    try {
      await locked.writeBlob(sha256(content), content);
    } finally {
      await locked.release();
    }
    expect((await store.backend.readBlob(id, sha256(content), { maxBytes: 3 }))!.toString()).toBe("0123");
    const refused = await readVerifiedBlob(store.backend, id, sha256(content), { bytes: 3 }).catch((e) => e);
    expect(isAgentTapeError(refused, "BLOB_CORRUPT")).toBe(true);
  });
});
