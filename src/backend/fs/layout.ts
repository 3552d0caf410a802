import { join } from "node:path";

/**
 * Blobs stored in fewer bytes than this go into the session's pack: most of a source tree's blobs, each of which
 * would otherwise take a file and a block (docs/format.md, "Blob packs").
 */
export const DEFAULT_PACK_BLOBS_UNDER = 4096;

/** Where each part of a session lives under the store root. One place, so nothing guesses. */
export class SessionLayout {
  constructor(
    readonly root: string,
    /** Write new blobs compressed when that pays (blob-codec.ts). Reading handles both either way. */
    readonly compressBlobs = true,
    /** Write blobs stored in fewer than this many bytes into the session's pack (blob-pack.ts); 0: none. */
    readonly packBlobsUnder = DEFAULT_PACK_BLOBS_UNDER,
  ) {}
  dir(id: string): string {
    return join(this.root, id);
  }
  log(id: string): string {
    return join(this.root, id, "events.jsonl");
  }
  /** Where each in-place cut of the log is recorded, for readers reading meanwhile (log-cuts.ts). */
  cuts(id: string): string {
    return join(this.root, id, "events.cuts");
  }
  meta(id: string): string {
    return join(this.root, id, "session.json");
  }
  blobs(id: string): string {
    return join(this.root, id, "blobs");
  }
  /** Sharded by the hash's first byte so no folder grows past 1/256 of the blobs. */
  blob(id: string, hash: string): string {
    return join(this.root, id, "blobs", hash.slice(0, 2), hash);
  }
  /** The pack: small blobs appended together into numbered segments (blob-pack.ts). */
  packs(id: string): string {
    return join(this.root, id, "blobs", "pack");
  }
  /** Temp files of blob writes in progress; anything here after a crash is garbage. */
  incomingBlobs(id: string): string {
    return join(this.root, id, "blobs", ".incoming");
  }
  records(id: string): string {
    return join(this.root, id, "records");
  }
  record(id: string, name: string): string {
    return join(this.root, id, "records", `${name}.json`);
  }
  /** A record's bytes kept beside it: a rewind archive's copy of the log's cut part (see archive-log.ts). */
  archivedLog(id: string, name: string): string {
    return join(this.root, id, "records", `${name}.jsonl`);
  }
}
