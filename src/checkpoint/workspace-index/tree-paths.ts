// Paths of the workspace index as the walk handles them: relative, "/"-separated, "" for the workspace itself.

export function joined(folder: string, name: string): string {
  return folder === "" ? name : `${folder}/${name}`;
}

export function isBelow(path: string, folder: string): boolean {
  return folder === "" || path === folder || path.startsWith(`${folder}/`);
}

export function parentOf(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash === -1 ? "" : path.slice(0, slash);
}

export function depthOf(folder: string): number {
  if (folder === "") return 0;
  let depth = 1;
  for (let i = folder.indexOf("/"); i !== -1; i = folder.indexOf("/", i + 1)) depth++;
  return depth;
}
