// A small SVG line chart of throughput against concurrency, from the benchmark's rows.
const W = 640;
const H = 360;
const M = { left: 70, right: 20, top: 40, bottom: 50 };

/** series: [{ label, color, points: [[concurrency, idsPerSecond], ...] }] */
export function throughputSvg(title, series) {
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const lx = (v) => Math.log2(v);
  const [x0, x1] = [Math.min(...xs.map(lx)), Math.max(...xs.map(lx))];
  const [y0, y1] = [Math.log10(Math.max(1, Math.min(...ys) / 2)), Math.log10(Math.max(...ys) * 2)];
  const px = (v) => M.left + ((lx(v) - x0) / (x1 - x0 || 1)) * (W - M.left - M.right);
  const py = (v) => H - M.bottom - ((Math.log10(v) - y0) / (y1 - y0 || 1)) * (H - M.top - M.bottom);
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${W / 2}" y="22" text-anchor="middle" font-size="14">${title}</text>`,
    `<line x1="${M.left}" y1="${H - M.bottom}" x2="${W - M.right}" y2="${H - M.bottom}" stroke="black"/>`,
    `<line x1="${M.left}" y1="${M.top}" x2="${M.left}" y2="${H - M.bottom}" stroke="black"/>`,
    `<text x="${W / 2}" y="${H - 12}" text-anchor="middle">concurrent callers on one sequence</text>`,
    `<text x="16" y="${H / 2}" transform="rotate(-90 16 ${H / 2})" text-anchor="middle">ids per second (log)</text>`,
  ];
  for (const x of [...new Set(xs)]) {
    out.push(`<text x="${px(x)}" y="${H - M.bottom + 16}" text-anchor="middle">${x}</text>`);
  }
  for (let e = Math.ceil(y0); e <= Math.floor(y1); e++) {
    const y = py(10 ** e);
    out.push(`<line x1="${M.left}" y1="${y}" x2="${W - M.right}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${M.left - 6}" y="${y + 4}" text-anchor="end">1e${e}</text>`);
  }
  series.forEach((s, i) => {
    const pts = s.points.map(([x, y]) => `${px(x).toFixed(1)},${py(y).toFixed(1)}`).join(' ');
    out.push(`<polyline points="${pts}" fill="none" stroke="${s.color}" stroke-width="2"/>`);
    for (const [x, y] of s.points) out.push(`<circle cx="${px(x)}" cy="${py(y)}" r="3" fill="${s.color}"/>`);
    out.push(`<text x="${M.left + 12}" y="${M.top + 14 + i * 16}" fill="${s.color}">${s.label}</text>`);
  });
  out.push('</svg>');
  return out.join('\n');
}
