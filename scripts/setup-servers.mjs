// Prepares the test servers once before the test files start in parallel: creates
// .venv and installs the pinned servers. Does nothing when MONGODB_URI is set.
import { ensureVenv } from './lib/python-env.mjs';

if (!process.env.MONGODB_URI) ensureVenv();
