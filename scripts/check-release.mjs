// Run by the release workflow before anything is published: the tag is `v` + the version
// of package.json, package.json names the repository the workflow runs in (npm provenance
// needs it), and the platform packages carry the same version, engines and metadata.
// Reads GITHUB_REF_NAME and GITHUB_REPOSITORY (or --tag and --repository).
import { parseArgs } from 'node:util';
import { releaseProblems } from './lib/release-checks.mjs';
import { ROOT } from './lib/python-env.mjs';

const { values } = parseArgs({ options: { tag: { type: 'string' }, repository: { type: 'string' } } });
const tag = values.tag ?? process.env.GITHUB_REF_NAME;
const repository = values.repository ?? process.env.GITHUB_REPOSITORY;
const problems = releaseProblems(ROOT, { tag, repository });
for (const problem of problems) console.log(`[check-release] ${problem}`);
console.log(`[check-release] ${problems.length ? 'FAILED' : `ready to publish ${tag} from ${repository}`}`);
process.exit(problems.length ? 1 : 0);
