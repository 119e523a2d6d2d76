// The SDK as its users get it: packed as npm publishes it (../pack.mjs), the
// tarball installed offline into a copy of each tiny project here (cjs/, a
// "type": "commonjs" project; esm/, a "type": "module" one), both with main.ts,
// type-checked by the SDK's pinned tsc in strict mode (node16 or nodenext, and
// node10 for cjs/, bundler for esm/), compiled and run against the server that
// VITOLA_CONSUMER_URL names (platform/sdk_test.go starts one).
//
// The projects' own folders lend them nothing but the SDK's installed
// packages (TypeScript, @types/node, React) from a node_modules one level up,
// which the tarball's @vitola/sdk is not among. Prints one JSON line:
// {"cjs": <what main.ts printed>, "esm": ...}.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { bin, install, pack, sdk } from "../pack.mjs";

const here = dirname(fileURLToPath(import.meta.url));

// How each project must have compiled main.ts's import of the SDK.
const projects = {
  cjs: { configs: ["tsconfig.json", "tsconfig.node10.json"], emitted: /require\("@vitola\/sdk"\)/ },
  esm: { configs: ["tsconfig.json", "tsconfig.bundler.json"], emitted: /from "@vitola\/sdk"/ },
};

function run(what, file, args, cwd) {
  try {
    return execFileSync(file, args, { cwd, encoding: "utf8", stdio: "pipe" });
  } catch (err) {
    throw new Error(`${what} failed:\n${err.stdout ?? ""}${err.stderr ?? ""}`);
  }
}

const tmp = mkdtempSync(join(tmpdir(), "vitola-sdk-consumers-"));
try {
  const tarball = pack(tmp);
  symlinkSync(join(sdk, "node_modules"), join(tmp, "node_modules"), "dir");
  const seen = {};
  for (const [name, { configs, emitted }] of Object.entries(projects)) {
    const dir = join(tmp, name);
    cpSync(join(here, name), dir, { recursive: true });
    mkdirSync(join(dir, "src"));
    cpSync(join(here, "main.ts"), join(dir, "src", "main.ts"));
    install(dir, tarball);
    for (const config of configs) run(`${name}: tsc -p ${config}`, bin("tsc"), ["-p", config], dir);
    const js = readFileSync(join(dir, "dist", "main.js"), "utf8");
    if (!emitted.test(js)) throw new Error(`${name}: tsc did not compile the import to ${emitted}:\n${js}`);
    const out = run(`${name}: node dist/main.js`, process.execPath, ["dist/main.js"], dir).trim();
    seen[name] = JSON.parse(out.slice(out.lastIndexOf("\n") + 1));
  }
  console.log(JSON.stringify(seen));
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
