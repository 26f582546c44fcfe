// Product dashboard charts (uPlot, served by the portal). The data is the page's compact JSON
// (#chart-data, see src/portal/chart-data.ts): exact integers, decoded here with BigInt into the
// API's apy-history and fee-stats columns as exact decimal strings. Numbers are made from them only
// to place pixels; the tooltip shows the exact strings. Series differ by line style and fill as
// well as colour, so the charts read without colour.
(() => {
  const source = document.getElementById('chart-data');
  if (!source || typeof uPlot === 'undefined') return;
  const data = decodeChartData(JSON.parse(source.textContent));
  const asset = data.asset;
  const day = (d) => Date.parse(`${d}T00:00:00Z`) / 1000;
  // A figure not known yet (a realised APY before its window has data) is a gap, not a zero.
  const num = (column) => column.map((v) => (v === null ? null : Number(v)));
  const pct = (s) =>
    s === null ? 'not yet (under 7 days of history)' : `${(Number(s) * 100).toFixed(2)} %`;
  const NET7 = '#0a7d3c';
  const NET = '#0b57d0';
  const UNDERLYING = '#3d4852';
  const PARTNER = '#0b57d0';
  const SERVICE = '#8a4b00';

  const axisFont = '12px system-ui, sans-serif';
  const xAxis = { stroke: '#57606a', font: axisFont, grid: { stroke: '#eaeef2' } };
  const yAxis = (fmt, side) => ({
    stroke: '#57606a',
    font: axisFont,
    grid: { stroke: side === 1 ? 'transparent' : '#eaeef2' },
    size: 72,
    side: side ?? 3,
    scale: side === 1 ? 'cum' : 'y',
    values: (_u, ticks) => ticks.map(fmt),
  });
  const compact = (v) =>
    Math.abs(v) >= 1e6
      ? `${(v / 1e6).toFixed(2)}M`
      : Math.abs(v) >= 1e3
        ? `${(v / 1e3).toFixed(1)}k`
        : Number.isInteger(v)
          ? String(v)
          : v.toFixed(2);
  // Amounts start at zero (bars and cumulative lines), APYs and TVL fit their data.
  const fromZero = (_u, min, max) => [Math.min(0, min), max > 0 ? max * 1.05 : 1];

  const charts = {
    apy: {
      x: data.apy_history.date,
      series: [
        {
          label: 'Net APY',
          column: data.apy_history.net_apy_for_user,
          stroke: NET,
          width: 2.5,
          fmt: pct,
        },
        {
          label: 'Net APY, realised over 7 days',
          column: data.apy_history.net_apy_7d,
          stroke: NET7,
          width: 2,
          dash: [2, 3],
          fmt: pct,
        },
        {
          label: 'Underlying APY',
          column: data.apy_history.underlying_apy,
          stroke: UNDERLYING,
          width: 2,
          dash: [6, 4],
          fmt: pct,
        },
      ],
      axes: [yAxis((v) => `${(v * 100).toFixed(1)} %`)],
    },
    tvl: {
      x: data.apy_history.date,
      series: [
        {
          label: 'TVL',
          column: data.apy_history.engine_total_assets,
          stroke: NET,
          width: 2,
          fill: 'rgba(11, 87, 208, 0.08)',
          fmt: (s) => `${s} ${asset}`,
        },
      ],
      axes: [yAxis(compact)],
    },
    fees: {
      x: data.fee_stats.date,
      series: [
        {
          label: 'Partner fee, day',
          column: data.fee_stats.daily_partner_fee_earned,
          stroke: PARTNER,
          fill: PARTNER,
          bars: -1,
          fmt: (s) => `${s} ${asset}`,
        },
        {
          label: 'Service fee, day',
          column: data.fee_stats.daily_service_fee_earned,
          stroke: SERVICE,
          fill: '#f6e3cc',
          bars: 1,
          fmt: (s) => `${s} ${asset}`,
        },
        {
          label: 'Partner fee, cumulative',
          column: data.fee_stats.cumulative_partner_fee_earned,
          stroke: PARTNER,
          width: 2,
          scale: 'cum',
          fmt: (s) => `${s} ${asset}`,
        },
        {
          label: 'Service fee, cumulative',
          column: data.fee_stats.cumulative_service_fee_earned,
          stroke: SERVICE,
          width: 2,
          dash: [6, 4],
          scale: 'cum',
          fmt: (s) => `${s} ${asset}`,
        },
      ],
      axes: [yAxis(compact), yAxis(compact, 1)],
      scales: { y: { range: fromZero }, cum: { range: fromZero } },
    },
  };

  /**
   * A tooltip that follows the cursor with the day's exact figures. It sits beside the chart in
   * the figure and is a polite live region, so keyboard and screen-reader users hear each day.
   */
  function tooltip(spec, el) {
    const figure = el.parentElement;
    const tip = document.createElement('div');
    tip.className = 'chart-tip';
    tip.setAttribute('aria-live', 'polite');
    tip.hidden = true;
    figure.append(tip);
    return (u) => {
      const i = u.cursor.idx;
      if (i === null || i === undefined) {
        tip.hidden = true;
        return;
      }
      tip.hidden = false;
      tip.replaceChildren();
      const head = document.createElement('strong');
      head.textContent = spec.x[i];
      tip.append(head);
      for (const s of spec.series) {
        const line = document.createElement('div');
        line.textContent = `${s.label}: ${s.fmt(s.column[i])}`;
        tip.append(line);
      }
      const box = figure.getBoundingClientRect();
      const over = u.over.getBoundingClientRect();
      const x = over.left - box.left + u.valToPos(u.data[0][i], 'x');
      const left = x + 14 + tip.offsetWidth > box.width ? x - 14 - tip.offsetWidth : x + 14;
      tip.style.left = `${Math.max(0, left)}px`;
      tip.style.top = `${over.top - box.top + 8}px`;
    };
  }

  function draw(el) {
    const spec = charts[el.dataset.chart];
    if (!spec) return;
    el.replaceChildren();
    const bars = (align) => uPlot.paths.bars({ size: [0.45, 24], align, gap: 0 });
    const u = new uPlot(
      {
        width: el.clientWidth,
        height: 240,
        legend: { show: false },
        cursor: { y: false, points: { size: 7 } },
        scales: { x: { time: true }, ...spec.scales },
        axes: [xAxis, ...spec.axes],
        series: [
          {},
          ...spec.series.map((s) => ({
            label: s.label,
            stroke: s.stroke,
            width: s.width ?? 1.5,
            dash: s.dash,
            fill: s.fill,
            scale: s.scale ?? 'y',
            paths: s.bars ? bars(s.bars) : undefined,
            points: { show: false },
          })),
        ],
        hooks: { setCursor: [tooltip(spec, el)] },
      },
      [spec.x.map(day), ...spec.series.map((s) => num(s.column))],
      el,
    );
    // Keyboard: arrows move the cursor day by day, Home/End jump, Escape hides it.
    let idx = spec.x.length - 1;
    const show = () =>
      u.setCursor({ left: u.valToPos(u.data[0][idx], 'x'), top: u.over.clientHeight / 2 });
    el.onkeydown = (e) => {
      const moves = { ArrowLeft: -1, ArrowRight: 1, Home: -Infinity, End: Infinity };
      if (e.key === 'Escape') return u.setCursor({ left: -10, top: -10 });
      if (!(e.key in moves)) return;
      e.preventDefault();
      idx = Math.min(spec.x.length - 1, Math.max(0, idx + moves[e.key]));
      show();
    };
    el.onfocus = show;
    el.onblur = () => u.setCursor({ left: -10, top: -10 });
    return u;
  }

  const els = [...document.querySelectorAll('[data-chart]')];
  const plots = els.map(draw);
  window.portalCharts = { data, plots, drawnAt: performance.now() };
  // Each chart keeps to its box's width (a phone turned, a window resized, a scrollbar shown).
  const fit = () => {
    for (const [i, el] of els.entries()) {
      const u = plots[i];
      if (u && u.width !== el.clientWidth) u.setSize({ width: el.clientWidth, height: 240 });
    }
  };
  let pending;
  const later = () => {
    clearTimeout(pending);
    pending = setTimeout(fit, 100);
  };
  if (typeof ResizeObserver === 'function') {
    const seen = new ResizeObserver(later);
    for (const el of els) seen.observe(el);
  } else {
    window.addEventListener('resize', later);
  }
})();

/** The compact form back to the API's columns (the inverse of encodeChartData in chart-data.ts). */
function decodeChartData(c) {
  const DAY_MS = 86_400_000;
  const dates = (d0, steps) => {
    if (d0 === null) return [];
    let t = Date.parse(`${d0}T00:00:00Z`);
    return steps.map((s) => {
      t += s * DAY_MS;
      return new Date(t).toISOString().slice(0, 10);
    });
  };
  // Running sums of a column plus, row by row, its daily column (TVL has none).
  const sums = (column, daily = []) => {
    let total = 0n;
    return column.map((v, i) => {
      total += BigInt(v) + BigInt(daily[i] ?? 0);
      return total;
    });
  };
  // Base units as the API writes amounts: no trailing zeros, no point for whole amounts.
  const units = (v) => {
    const digits = (v < 0n ? -v : v).toString().padStart(c.dec + 1, '0');
    const int = digits.slice(0, digits.length - c.dec);
    const frac = digits.slice(digits.length - c.dec).replace(/0+$/, '');
    return `${v < 0n ? '-' : ''}${int}${frac ? `.${frac}` : ''}`;
  };
  // Millionths as the API's 6-place fractions.
  const fraction = (v) => {
    const digits = (v < 0n ? -v : v).toString().padStart(7, '0');
    return `${v < 0n ? '-' : ''}${digits.slice(0, -6)}.${digits.slice(-6)}`;
  };
  const each = (column, fn) => column.map((v) => fn(BigInt(v)));
  return {
    days: c.days,
    from: c.from,
    to: c.to,
    asset: c.asset,
    apy_history: {
      date: dates(c.apy.d0, c.apy.dd),
      underlying_apy: each(c.apy.u, fraction),
      net_apy_for_user: c.apy.n.map((v, i) => fraction(BigInt(c.apy.u[i]) - BigInt(v))),
      net_apy_7d: (c.apy.n7 ?? []).map((v, i) =>
        v === null ? null : fraction(BigInt(c.apy.u[i]) - BigInt(v)),
      ),
      engine_total_assets: sums(c.apy.tvl).map(units),
    },
    fee_stats: {
      date: dates(c.fees.d0, c.fees.dd),
      daily_partner_fee_earned: each(c.fees.dp, units),
      daily_service_fee_earned: each(c.fees.ds, units),
      cumulative_partner_fee_earned: sums(c.fees.cp, c.fees.dp).map(units),
      cumulative_service_fee_earned: sums(c.fees.cs, c.fees.ds).map(units),
    },
  };
}
