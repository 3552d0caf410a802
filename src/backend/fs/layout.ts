import { join, sep } from "node:path";
import { assertSessionId } from "../../core/ids.js";
import { isBlobHash } from "../names.js";

/**
 * Where each part of a session lives under the store root. One place, so nothing guesses; and the one place a
 * session id becomes a path, so the id is checked here (INVALID_SESSION_ID), not by each backend method.
 */
export class SessionLayout {
  constructor(
    readonly root: string,
    /** Write new blobs compressed when that pays (blob-codec.ts). Reading handles both either way. */
    readonly compressBlobs = true,
    /** Write blobs stored in fewer than this many bytes into the session's pack (blob-pack.ts); 0: none. */
    readonly packBlobsUnder = 0,
  ) {}
  // The last session's folder, so a path in it is made by putting names together: `join` normalises every time,
  // and a 1,000-file rewind asks for some 3,000 blob paths (docs/ARCHITECTURE.md, "Batched file work").
  private lastId: string | undefined;
  private lastDir = "";
  dir(id: string): string {
    if (id === this.lastId) return this.lastDir;
    assertSessionId(id);
    const dir = join(this.root, id);
    this.lastId = id;
    this.lastDir = dir;
    return dir;
  }
  log(id: string): string {
    return join(this.dir(id), "events.jsonl");
  }
  /** Where each in-place cut of the log is recorded, for readers reading meanwhile (log-cuts.ts). */
  cuts(id: string): string {
    return join(this.dir(id), "events.cuts");
  }
  meta(id: string): string {
    return join(this.dir(id), "session.json");
  }
  blobs(id: string): string {
    return join(this.dir(id), "blobs");
  }
  /** Sharded by the hash's first byte so no folder grows past 1/256 of the blobs. */
  blob(id: string, hash: string): string {
    const dir = this.dir(id);
    // A blob's name is 64 hex digits, nothing to normalise; anything else is joined (and found missing).
    if (isBlobHash(hash)) return `${dir}${sep}blobs${sep}${hash.slice(0, 2)}${sep}${hash}`;
    return join(dir, "blobs", hash.slice(0, 2), hash);
  }
  /** The pack: small blobs appended together into numbered segments (blob-pack.ts). */
  packs(id: string): string {
    return join(this.dir(id), "blobs", "pack");
  }
  /** Temp files of blob writes in progress; anything here after a crash is garbage. */
  incomingBlobs(id: string): string {
    return join(this.dir(id), "blobs", ".incoming");
  }
  records(id: string): string {
    return join(this.dir(id), "records");
  }
  record(id: string, name: string): string {
    return join(this.dir(id), "records", `${name}.json`);
  }
  /** A record's bytes kept beside it: a rewind archive's copy of the log's cut part (see archive-log.ts). */
  archivedLog(id: string, name: string): string {
    return join(this.dir(id), "records", `${name}.jsonl`);
  }
}
