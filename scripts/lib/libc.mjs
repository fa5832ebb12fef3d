// Which C library this Linux process runs on, as Node's own report tells it.
/** 'glibc', 'musl', or null when it cannot tell (or not on Linux). */
export function familySync() {
  if (process.platform !== 'linux') return null;
  const report = process.report?.getReport?.();
  if (report?.header?.glibcVersionRuntime) return 'glibc';
  return (report?.sharedObjects ?? []).some((l) => l.includes('musl')) ? 'musl' : null;
}
