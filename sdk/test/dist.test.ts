// The built package as its users get it: the packed tarball installed into a
// temporary folder, loaded through package.json's exports by plain Node
// (require and import) and type-checked by tsc as an ESM and a CommonJS
// consumer would. (test/consumers/ runs whole projects against the server.)
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import doc from "./callback-vectors.json";
import { bin, install, pack, sdk } from "./pack.mjs";

const vector = doc.vectors[0]!;
let tmp = "";

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "vitola-sdk-dist-"));
  writeFileSync(join(tmp, "package.json"), JSON.stringify({ private: true }));
  install(tmp, pack(tmp));
});

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

// Verifies the first shared vector with the package as loaded by `load`.
const program = (load: string) => `
${load}
const v = JSON.parse(process.env.VECTOR);
sdk.verifyCallback({ secrets: v.secrets, headers: v.headers, body: v.body, now: v.now * 1000 })
  .then(async (e) => {
    const refused = await sdk.verifyCallback({ secrets: "whsec_other", headers: v.headers, body: v.body, now: v.now * 1000 }).catch((err) => err);
    console.log(JSON.stringify({ id: e.id, type: e.type, refused: refused instanceof sdk.CallbackError && refused.code, client: typeof sdk.createClient }));
  });
`;

function run(args: string[]) {
  const out = execFileSync(process.execPath, args, { cwd: tmp, env: { ...process.env, VECTOR: JSON.stringify(vector) }, encoding: "utf8" });
  return JSON.parse(out);
}

const want = { id: vector.expect.id, type: vector.expect.type, refused: "no_matching_signature", client: "function" };

describe("the built package", () => {
  // npm always packs a README; LICENSE is listed in package.json's files.
  // sdk/LICENSE is a copy of the repository's, kept identical here.
  it("carries the repository's LICENSE and the SDK's README", () => {
    const installed = join(tmp, "node_modules", "@vitola", "sdk");
    expect(readFileSync(join(installed, "LICENSE"), "utf8")).toBe(readFileSync(join(sdk, "..", "LICENSE"), "utf8"));
    expect(readFileSync(join(installed, "README.md"), "utf8")).toBe(readFileSync(join(sdk, "README.md"), "utf8"));
  });

  it("exports verifyCallback to require (CommonJS)", () => {
    expect(run(["-e", program(`const sdk = require("@vitola/sdk");`)])).toEqual(want);
  });

  it("exports verifyCallback to import (ESM)", () => {
    expect(run(["--input-type=module", "-e", program(`import * as sdk from "@vitola/sdk";`)])).toEqual(want);
  });

  it("imports nothing at run time (no node: modules, so edge runtimes load it)", () => {
    const esm = readFileSync(join(tmp, "node_modules", "@vitola", "sdk", "dist", "index.js"), "utf8");
    // No import statement (minified: at the start or after ; or }), no import().
    expect(esm).not.toMatch(/(?:^|[;}\n])\s*import\s*[\w{*"']|\bimport\s*\(/);
    expect(esm).toMatch(/\bexport\s*\{/);
  });

  // esbuild is tsup's own, pinned by the lock file.
  it("leaves verifyCallback out of the bundle of a page that uses only the feed client", () => {
    writeFileSync(join(tmp, "page.mjs"), `import { createClient } from "@vitola/sdk";\nconsole.log(createClient);\n`);
    const page = execFileSync(bin("esbuild"), ["page.mjs", "--bundle", "--minify", "--format=esm"], { cwd: tmp, encoding: "utf8", stdio: "pipe" });
    expect(page).toContain("x-service-key");
    expect(page).not.toMatch(/TextEncoder|X-Service-Signature|CallbackError/);
  });

  it("types verifyCallback for ESM and CommonJS consumers, with Node's types or the DOM's", () => {
    const consumer = join(tmp, "consumer");
    mkdirSync(consumer, { recursive: true });
    const use = (sdk: string) => `
export async function receive(body: string, headers: Record<string, string>): Promise<${sdk}CallbackEvent> {
  try {
    return await ${sdk}verifyCallback({ secrets: ["whsec_a", "whsec_b"], headers, body, toleranceSeconds: 300 });
  } catch (err) {
    if (err instanceof ${sdk}CallbackError) {
      const code: ${sdk}CallbackErrorCode = err.code;
      const status: number = err.status;
      throw new Error(code + status);
    }
    throw err;
  }
}
export const sign: (secret: string, body: string, ts: number) => Promise<string> = ${sdk}signCallback;
`;
    writeFileSync(join(consumer, "esm.mts"), `import { verifyCallback, signCallback, CallbackError, type CallbackEvent, type CallbackErrorCode } from "@vitola/sdk";\n${use("")}`);
    writeFileSync(join(consumer, "cjs.cts"), `import sdk = require("@vitola/sdk");\n${use("sdk.")}`);
    writeFileSync(join(consumer, "crypto.mts"), `import { webcrypto } from "node:crypto";\nimport { verifyCallback } from "@vitola/sdk";\nexport const v = (body: string) => verifyCallback({ secrets: "s", headers: new Headers(), body, crypto: webcrypto });\n`);
    for (const [lib, types, files] of [
      [["es2022"], ["node"], ["esm.mts", "cjs.cts", "crypto.mts"]],
      [["es2022", "dom"], [], ["esm.mts", "cjs.cts"]],
    ] as const) {
      const tsconfig = {
        compilerOptions: { strict: true, noEmit: true, module: "nodenext", moduleResolution: "nodenext", lib, types, typeRoots: [join(sdk, "node_modules", "@types")] },
        files,
      };
      writeFileSync(join(consumer, "tsconfig.json"), JSON.stringify(tsconfig));
      try {
        execFileSync(bin("tsc"), ["-p", consumer], { cwd: consumer, encoding: "utf8", stdio: "pipe" });
      } catch (err) {
        throw new Error(`tsc (lib ${lib}, types ${types}): ${(err as { stdout?: string }).stdout}`);
      }
    }
  }, 600_000); // two tsc runs: about 30 s on a quiet machine, 90 s seen on a busy one
});
