import { createHash } from "node:crypto";
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";

/**
 * The whole tree below `root`, byte for byte and at any depth: entry path (its bytes in hex where they are
 * not printable ASCII, so names that are not UTF-8 compare exactly) -> kind, mode, sha256 of a file's bytes or
 * a link's target bytes. Each folder is reached through its parent's descriptor (/proc/self/fd/N/name), so a
 * path longer than PATH_MAX is read like any other. `leaveOut` names top-level entries not compared.
 */
export function byteTreeOf(root: string, leaveOut: readonly string[] = []): Record<string, string> {
  const tree: Record<string, string> = {};
  const visit = (dirFd: number, prefix: string) => {
    const names = readdirSync(`/proc/self/fd/${dirFd}`, { encoding: "buffer" }).sort(Buffer.compare);
    for (const name of names) {
      const shown = shownName(name);
      if (prefix === "" && leaveOut.includes(shown)) continue;
      const path = prefix === "" ? shown : `${prefix}/${shown}`;
      const where = Buffer.concat([Buffer.from(`/proc/self/fd/${dirFd}/`), name]);
      const info = lstatSync(where);
      const mode = (info.mode & 0o7777).toString(8);
      if (info.isSymbolicLink()) tree[path] = `link -> ${shownName(readlinkSync(where, { encoding: "buffer" }))}`;
      else if (info.isDirectory()) {
        tree[path] = `dir ${mode}`;
        const fd = openSync(where, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
        try {
          visit(fd, path);
        } finally {
          closeSync(fd);
        }
      } else tree[path] = `file ${mode} ${sha(readFileSync(where))}`;
    }
  };
  const fd = openSync(root, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    if (!fstatSync(fd).isDirectory()) throw new Error(`${root} is not a folder`);
    visit(fd, "");
  } finally {
    closeSync(fd);
  }
  return tree;
}

/** A name as printable text that still tells every byte: printable ASCII as is, anything else as `\xNN`. */
export function shownName(name: Buffer): string {
  let out = "";
  for (const byte of name)
    out +=
      byte >= 0x20 && byte < 0x7f && byte !== 0x5c
        ? String.fromCharCode(byte)
        : `\\x${byte.toString(16).padStart(2, "0")}`;
  return out;
}

function sha(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex").slice(0, 16);
}

/** One entry to plant: its name as bytes, and a file's bytes, a link's target bytes or a folder's entries. */
export type PlantedEntry =
  | { name: Buffer; kind: "file"; content: Buffer; mode: number }
  | { name: Buffer; kind: "link"; target: Buffer }
  | { name: Buffer; kind: "dir"; mode: number; entries: PlantedEntry[] };

/** Makes `entries` in the folder `root`, at any depth and with any bytes in their names (see {@link byteTreeOf}). */
export function plantTree(root: string, entries: readonly PlantedEntry[]): void {
  const plant = (dirFd: number, list: readonly PlantedEntry[]) => {
    for (const entry of list) {
      const where = Buffer.concat([Buffer.from(`/proc/self/fd/${dirFd}/`), entry.name]);
      if (entry.kind === "file") {
        writeFileSync(where, entry.content, { flag: "wx" });
        chmodSync(where, entry.mode);
      } else if (entry.kind === "link") symlinkSync(entry.target, where);
      else {
        mkdirSync(where);
        const fd = openSync(where, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
        try {
          plant(fd, entry.entries);
        } finally {
          closeSync(fd);
        }
        chmodSync(where, entry.mode); // after what goes inside: a mode without the owner's w would stop it
      }
    }
  };
  const fd = openSync(root, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    plant(fd, entries);
  } finally {
    closeSync(fd);
  }
}
