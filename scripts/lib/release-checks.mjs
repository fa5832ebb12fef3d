// What must hold before a release publishes (scripts/check-release.mjs runs these in the
// release workflow; __test__/tooling/release-files.test.mjs runs them on every test run).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const json = (root, path) => JSON.parse(readFileSync(join(root, path), 'utf8'));

/** The fields `napi create-npm-dirs` copies from package.json into each platform package. */
export const SHARED_FIELDS = ['version', 'description', 'keywords', 'homepage', 'license', 'engines', 'repository', 'bugs'];

/** `owner/name` of the GitHub repository package.json names, or null. */
export function repositoryOf(pkg) {
  return /^git\+https:\/\/github\.com\/([\w.-]+\/[\w.-]+?)\.git$/.exec(pkg.repository?.url ?? '')?.[1] ?? null;
}

/** Problems with the platform packages (npm/<platform>/package.json) against package.json. */
export function platformPackageProblems(root) {
  const pkg = json(root, 'package.json');
  const problems = [];
  const platforms = readdirSync(join(root, 'npm')).sort();
  if (platforms.length !== pkg.napi.targets.length) problems.push(`npm/ has ${platforms.length} platform folders for ${pkg.napi.targets.length} targets`);
  for (const platform of platforms) {
    const sub = json(root, `npm/${platform}/package.json`);
    if (sub.name !== `${pkg.name}-${platform}`) problems.push(`npm/${platform}: name ${sub.name}`);
    if (sub.main !== `${pkg.napi.binaryName}.${platform}.node`) problems.push(`npm/${platform}: main ${sub.main}`);
    for (const key of SHARED_FIELDS) {
      if (JSON.stringify(sub[key]) !== JSON.stringify(pkg[key])) problems.push(`npm/${platform}/package.json: ${key} differs from package.json (npx napi create-npm-dirs)`);
    }
  }
  return problems;
}

/**
 * Problems that stop a release: `tag` (the pushed tag, e.g. v1.2.3) must be `v` and the
 * version, `repository` (`owner/name` the workflow runs in) the one package.json names
 * (npm refuses provenance from another repository, E422), the platform packages in step.
 */
export function releaseProblems(root, { tag, repository }) {
  const pkg = json(root, 'package.json');
  const problems = [];
  if (tag !== `v${pkg.version}`) problems.push(`the tag ${tag} is not v${pkg.version} (package.json's version)`);
  const named = repositoryOf(pkg);
  if (named?.toLowerCase() !== repository?.toLowerCase()) problems.push(`package.json's repository is ${named ?? 'missing'}, the workflow runs in ${repository}`);
  return problems.concat(platformPackageProblems(root));
}
