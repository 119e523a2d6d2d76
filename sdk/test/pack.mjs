// pack makes the tarball npm would publish, from the current source, without
// touching sdk/dist: package.json's `files` are copied to a staging folder,
// tsup builds into its dist, and `npm pack` packs it there. Other tests read
// sdk/dist meanwhile (go test runs packages in parallel), and tsup empties its
// output folder first.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const sdk = dirname(dirname(fileURLToPath(import.meta.url)));
export const bin = (name) => join(sdk, "node_modules", ".bin", name);

/** Packs the SDK into dest (a folder) and returns the tarball's path. */
export function pack(dest) {
  const stage = mkdtempSync(join(dest, "stage-"));
  const pkg = JSON.parse(readFileSync(join(sdk, "package.json"), "utf8"));
  cpSync(join(sdk, "package.json"), join(stage, "package.json"));
  for (const f of pkg.files) {
    if (f !== "dist") cpSync(join(sdk, f), join(stage, f), { recursive: true });
  }
  execFileSync(bin("tsup"), ["--out-dir", join(stage, "dist")], { cwd: sdk, stdio: "pipe" });
  mkdirSync(dest, { recursive: true });
  // --ignore-scripts: prepack would build again, into the stage's dist from the stage's (absent) sources.
  const out = execFileSync("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", dest], { cwd: stage, encoding: "utf8", stdio: "pipe" });
  return join(dest, JSON.parse(out)[0].filename);
}

/** Installs a tarball into the project at dir, offline (the SDK has no dependencies to fetch). */
export function install(dir, tarball) {
  execFileSync("npm", ["install", "--no-save", "--offline", "--no-audit", "--no-fund", "--loglevel=error", tarball], { cwd: dir, stdio: "pipe" });
}
