// named-fs: a workspace's name may hold bytes that are not UTF-8 (docs/ARCHITECTURE.md, "Names and depths").
import { stat } from "../core/named-fs.js";
import { resolve as resolvePath } from "node:path";
import { InvalidArgumentError } from "../core/errors.js";

/** The workspace as an absolute path, or INVALID_ARGUMENT when it is missing or not a folder. */
export async function existingFolder(workspace: string): Promise<string> {
  if (typeof workspace !== "string" || workspace === "")
    throw new InvalidArgumentError(`workspace must be a folder's path, not ${JSON.stringify(workspace)}.`);
  const path = resolvePath(workspace);
  const info = await stat(path).catch((error: NodeJS.ErrnoException) => {
    throw new InvalidArgumentError(
      `workspace ${path} cannot be used (${error.code ?? error.message}): create it first.`,
      {
        cause: error,
      },
    );
  });
  if (!info.isDirectory()) throw new InvalidArgumentError(`workspace ${path} is not a folder.`);
  return path;
}
