// Preloaded by scripts/npm-ci-as.mjs: this Node process (npm) reports the operating system
// and CPU named by MSEQ_AS_PLATFORM and MSEQ_AS_ARCH, so that npm's platform checks run as
// on that machine.
'use strict';
Object.defineProperty(process, 'platform', { value: process.env.MSEQ_AS_PLATFORM });
Object.defineProperty(process, 'arch', { value: process.env.MSEQ_AS_ARCH });
