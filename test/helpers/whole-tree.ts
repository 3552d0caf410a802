import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { lstat, open, readdir, readFile, readlink } from "node:fs/promises";

/** What a whole-tree snapshot records of each entry, beyond kind, bytes, mode and link target. */
export interface ByteTreeOptions {
  /** Name the hard-link group of a file with more than one link (by the first of its names, in byte order). */
  hardLinks?: boolean;
  /** Record each entry's owner and group (uid:gid). */
  owners?: boolean;
}

/**
 * The whole tree below `root`, names read as bytes (so names that are not UTF-8 are seen as they are), as a
 * map from each path (bytes shown with `\xNN` escapes for anything that is not printable ASCII) to what it is:
 * a file's mode and sha256, a folder's mode, a link's target bytes; with `hardLinks`, the group a file shares
 * its inode with; with `owners`, uid and gid. For comparing a workspace with a snapshot taken earlier.
 */
export async function byteTreeOf(root: string, options: ByteTreeOptions = {}): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  const inodes = new Map<number, string>();
  // Each folder is reached through its parent's descriptor (/proc/self/fd/N/name): a path past PATH_MAX is read
  // like any other.
  const visit = async (dir: Buffer, prefix: string) => {
    const folder = await open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      const here = Buffer.from(`/proc/self/fd/${folder.fd}/`);
      const names = (await readdir(here, { encoding: "buffer" })).sort(Buffer.compare);
      for (const name of names) {
        const path = prefix === "" ? shown(name) : `${prefix}/${shown(name)}`;
        const absolute = Buffer.concat([here, name]);
        const info = await lstat(absolute);
        const mode = (info.mode & 0o7777).toString(8);
        const owner = options.owners ? ` owner ${info.uid}:${info.gid}` : "";
        if (info.isDirectory()) {
          tree[path] = `dir ${mode}${owner}`;
          await visit(absolute, path);
        } else if (info.isSymbolicLink()) {
          tree[path] = `link -> ${shown(await readlink(absolute, { encoding: "buffer" }))}${owner}`;
        } else if (info.isFile()) {
          const hash = createHash("sha256")
            .update(await readFile(absolute))
            .digest("hex")
            .slice(0, 16);
          let group = "";
          if (options.hardLinks && info.nlink > 1) {
            if (!inodes.has(info.ino)) inodes.set(info.ino, path);
            group = ` linked with ${inodes.get(info.ino)}`;
          }
          tree[path] = `file ${mode} ${hash}${owner}${group}`;
        } else tree[path] = "other";
      }
    } finally {
      await folder.close();
    }
  };
  await visit(Buffer.from(root), "");
  return tree;
}

/** A name's bytes as text: printable ASCII as is, anything else (and the backslash) as `\xNN`. */
export function shown(name: Buffer): string {
  let out = "";
  for (const byte of name)
    out += byte >= 0x20 && byte < 0x7f && byte !== 0x5c ? String.fromCharCode(byte) : `\\x${byte.toString(16)}`;
  return out;
}
