// `npm run prepare`: build dist/ with tsc. npm runs it after `npm install` in this directory, and when
// another project installs this directory by path (`npm install /path/to/clients/typescript`, a `file:`
// dependency). In that second case npm installs neither the devDependencies the build needs (tsc) nor,
// for a linked directory, the dependencies the built code imports (Node resolves them from here): a
// fresh clone has no node_modules, so install them first, as npm itself does for a git dependency.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(here, "node_modules", "typescript", "bin", "tsc");
if (!existsSync(tsc)) {
  // The outer npm passes its options down as npm_config_* variables (a dry run, a global install,
  // --omit=dev, another prefix...): none is this install's, except where packages come from.
  const keep = /^npm_config_(registry|cache|userconfig|globalconfig|proxy|https_proxy|noproxy|strict_ssl|cafile|ca|.*:registry|\/\/.*)$/i;
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_config_/i.test(name) || keep.test(name)));
  const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ["npm"];
  const args = ["install", "--include=dev", "--ignore-scripts", "--no-package-lock", "--no-audit", "--no-fund", "--loglevel=error"];
  execFileSync(npm[0], [...npm.slice(1), ...args], { cwd: here, env, stdio: ["ignore", "inherit", "inherit"] });
}
execFileSync(process.execPath, [tsc, "-p", here], { cwd: here, stdio: "inherit" });
