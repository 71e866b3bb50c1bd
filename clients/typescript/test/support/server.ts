/**
 * Starts a real `stowage serve` ($STOWAGE_BIN, default target/debug/stowage of
 * the repository) on 127.0.0.1:0 with a temporary SQLite store and two tenants,
 * reads its `listening on URL` line, and stops it with SIGTERM.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

import { StowageClient, type StowageClientOptions } from "@stowage/client";

/** clients/typescript (this file is build/test/support/server.js once compiled). */
export const PACKAGE_ROOT = resolve(fileURLToPath(new URL("../../../", import.meta.url)));
export const REPO_ROOT = resolve(PACKAGE_ROOT, "../..");

export function stowageBin(): string {
  return process.env.STOWAGE_BIN ?? join(REPO_ROOT, "target/debug/stowage");
}

export interface TestServer {
  url: string;
  /** Tenant `acme`'s token (configured by SHA-256 in `[[server.tokens]]`). */
  acmeToken: string;
  /** Tenant `globex`'s token (configured in a token file). */
  globexToken: string;
  dir: string;
  /** A client of tenant `acme` (or with other options). */
  client(options?: Partial<StowageClientOptions>): StowageClient;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

function token(): string {
  return `tok-${randomBytes(16).toString("hex")}`;
}

export async function startServer(extraServerLines = ""): Promise<TestServer> {
  const bin = stowageBin();
  if (!existsSync(bin)) {
    throw new Error(`no stowage binary at ${bin}: set STOWAGE_BIN or build it (ci.sh does)`);
  }
  const dir = await mkdtemp(join(tmpdir(), "stowage-ts-"));
  const acmeToken = token();
  const globexToken = token();
  const sha = createHash("sha256").update(acmeToken).digest("hex");
  const config = [
    "[stores.main]",
    'adapter = "sqlite"',
    'data_dir = "data"',
    "",
    "[server]",
    'listen = "127.0.0.1:0"',
    'token_file = "tokens"',
    extraServerLines,
    "",
    "[[server.tokens]]",
    'tenant = "acme"',
    `sha256 = "${sha}"`,
    "",
  ].join("\n");
  await writeFile(join(dir, "stowage.toml"), config);
  await writeFile(join(dir, "tokens"), `# tenant token\nglobex ${globexToken}\n`);
  await chmod(join(dir, "tokens"), 0o600);
  const cache = join(tmpdir(), "stowage-ts-client-component-cache");
  await mkdir(cache, { recursive: true });

  const child = spawn(bin, ["--config", join(dir, "stowage.toml"), "serve"], {
    env: { ...process.env, STOWAGE_CACHE_DIR: cache },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  let stderr = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (chunk: string) => {
    stderr = (stderr + chunk).slice(-20_000);
  });
  const url = await new Promise<string>((resolveUrl, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => reject(new Error(`stowage serve did not start in 180 s\n${stderr}`)), 180_000);
    lines.on("line", (line) => {
      const match = /^listening on (https?:\/\/\S+)$/.exec(line.trim());
      if (match?.[1]) {
        clearTimeout(timer);
        resolveUrl(match[1]);
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`stowage serve exited (${code ?? signal}) before listening\n${stderr}`));
    });
    child.once("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });

  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((done) => child.once("exit", () => done()));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
      await exited;
      clearTimeout(timer);
    }
    running.delete(child);
    await rm(dir, { recursive: true, force: true });
  };

  return {
    url,
    acmeToken,
    globexToken,
    dir,
    client: (options) => new StowageClient({ baseUrl: url, token: acmeToken, ...options }),
    stop,
  };
}

/** A fresh conversation id per call (tests share one server). */
let counter = 0;
export function uniqueId(prefix: string): string {
  counter++;
  return `${prefix}-${process.pid}-${counter}-${randomBytes(3).toString("hex")}`;
}
