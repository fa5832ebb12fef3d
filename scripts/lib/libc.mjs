// Which C library this Linux process runs on, as Node's own report tells it.
/** 'glibc', 'musl', or null when it cannot tell (or not on Linux). */
export function familySync() {
  if (process.platform !== 'linux') return null;
  const header = process.report?.getReport?.().header;
  if (header?.glibcVersionRuntime) return 'glibc';
  const libs = process.report?.getReport?.().sharedObjects ?? [];
  return libs.some((l) => l.includes('musl')) ? 'musl' : null;
}
