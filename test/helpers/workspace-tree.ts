import { createHash } from "node:crypto";
import { lstat, readdir, readFile, readlink } from "node:fs/promises";
import { join } from "node:path";

/**
 * The whole tree below `root` as path -> what it is (file bytes' sha256 and mode, folder mode,
 * link target), for comparing a workspace with a copy taken earlier. `leaveOut` names top-level
 * or nested paths (relative, `/`-separated) not compared, such as `.git` or the session store.
 */
export async function treeOf(root: string, leaveOut: readonly string[] = [".git"]): Promise<Record<string, string>> {
  const tree: Record<string, string> = {};
  const visit = async (dir: string, prefix: string) => {
    for (const name of (await readdir(dir)).sort()) {
      const path = prefix === "" ? name : `${prefix}/${name}`;
      if (leaveOut.includes(path) || leaveOut.includes(name)) continue;
      const absolute = join(dir, name);
      const info = await lstat(absolute);
      const mode = (info.mode & 0o7777).toString(8);
      if (info.isDirectory()) {
        tree[path] = `dir ${mode}`;
        await visit(absolute, path);
      } else if (info.isSymbolicLink()) tree[path] = `link -> ${await readlink(absolute)}`;
      else
        tree[path] = `file ${mode} ${createHash("sha256")
          .update(await readFile(absolute))
          .digest("hex")}`;
    }
  };
  await visit(root, "");
  return tree;
}

/** Every regular file below `dir` (recursively) with its bytes as text: for workspaces whose tools write text. */
export async function textFilesOf(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true }))
    if (entry.isFile()) {
      const path = join(entry.parentPath, entry.name);
      out[path.slice(dir.length + 1)] = await readFile(path, "utf8");
    }
  return out;
}
