// The Storage page's charts, drawn by Chart.js on a canvas (no inline styles or eval, so the
// gateway's strict CSP holds). Each chart is created once; later data updates it in place.
// Colours come from the page's CSS variables and follow prefers-color-scheme.
import { useEffect, useRef } from "react";
import {
  Chart, Filler, LinearScale, LineController, LineElement, PointElement, RadarController, RadialLinearScale, Tooltip,
  type ChartConfiguration,
} from "chart.js";
import { axisTime, plotUpdate, type PlotPoint } from "../lib/stats";

Chart.register(LineController, RadarController, LineElement, PointElement, LinearScale, RadialLinearScale, Filler, Tooltip);

interface Colours {
  accent: string;
  fill: string;
  muted: string;
  line: string;
}

/** The page's colours now (light or dark, as its CSS variables say). */
function colours(): Colours {
  const css = getComputedStyle(document.documentElement);
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  const accent = v("--accent", "#2c5fb8");
  // The area under the line and the radar's shape: the accent at 30% opacity (#rrggbb + alpha).
  const fill = /^#[0-9a-f]{6}$/i.test(accent) ? `${accent}4d` : accent;
  return { accent, fill, muted: v("--muted", "#5f5f5a"), line: v("--line", "#dcdcd6") };
}

/** Calls restyle whenever the colour scheme changes; returns the unsubscribe. */
function onSchemeChange(restyle: () => void): () => void {
  const mq = window.matchMedia("(prefers-color-scheme: dark)");
  mq.addEventListener("change", restyle);
  return () => mq.removeEventListener("change", restyle);
}

/** A canvas-backed chart made once from config and destroyed on unmount. */
function useChart<T extends "line" | "radar">(make: () => ChartConfiguration<T, PlotPoint[] | number[], string>, restyle: (c: Chart<T, PlotPoint[] | number[], string>, k: Colours) => void) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<Chart<T, PlotPoint[] | number[], string> | null>(null);
  useEffect(() => {
    const c = new Chart(canvas.current!, make());
    chart.current = c;
    restyle(c, colours());
    c.update("none");
    const off = onSchemeChange(() => {
      restyle(c, colours());
      c.update("none");
    });
    return () => {
      off();
      c.destroy();
      chart.current = null;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);
  return { canvas, chart };
}

/** The radar of the cluster's five scores (percent). label is its text for screen readers. */
export function RadarChart({ labels, values, label }: { labels: string[]; values: number[]; label: string }) {
  // The point labels read the newest values through this ref (the options are made once).
  const chartValues = useRef(values);
  chartValues.current = values;
  const { canvas, chart } = useChart<"radar">(
    () => ({
      type: "radar",
      data: { labels, datasets: [{ label: "Score", data: values, borderWidth: 2, pointRadius: 3, pointHoverRadius: 5, pointHitRadius: 14, fill: true }] },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        // A tooltip for the nearest axis wherever the pointer is, not only over a 3-pixel point.
        interaction: { mode: "nearest", intersect: false },
        plugins: { tooltip: { callbacks: { label: (i) => `${i.label}: ${i.formattedValue}%` } } },
        scales: {
          r: {
            min: 0,
            max: 100,
            ticks: { display: false, stepSize: 25 },
            // Each axis's name with its score, so the numbers are on the chart, not only in the tooltip.
            pointLabels: { callback: (label: string, i: number) => [label, `${(chartValues.current[i] ?? 0).toString()}%`] },
          },
        },
      },
    }),
    (c, k) => {
      const ds = c.data.datasets[0];
      ds.borderColor = k.accent;
      ds.backgroundColor = k.fill;
      ds.pointBackgroundColor = k.accent;
      const r = c.options.scales!.r! as { grid: { color: string }; angleLines: { color: string }; pointLabels: { color: string } };
      r.grid.color = k.line;
      r.angleLines.color = k.line;
      r.pointLabels.color = k.muted;
    },
  );
  useEffect(() => {
    const c = chart.current;
    if (!c) return;
    c.data.labels = labels;
    c.data.datasets[0].data = values;
    c.update("none");
  }, [chart, labels, values]);
  return (
    <div className="chart radar">
      <canvas ref={canvas} role="img" aria-label={label}>{label}</canvas>
    </div>
  );
}

/**
 * The capacity used over time (percent). Each refresh that only adds readings pushes them onto
 * the chart's series (dropping the oldest past the bound) instead of rebuilding it. Extra
 * attributes (test hooks, aria-describedby) go on the canvas.
 */
export function CapacityChart({ points, ...attrs }: { points: PlotPoint[] } & React.CanvasHTMLAttributes<HTMLCanvasElement> & Record<`data-${string}`, string | number>) {
  const { canvas, chart } = useChart<"line">(
    () => ({
      type: "line",
      data: { datasets: [{ label: "Used", data: [] as PlotPoint[], borderWidth: 2, pointRadius: 0, tension: 0, fill: "origin" }] },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        parsing: false,
        normalized: true,
        interaction: { mode: "nearest", axis: "x", intersect: false },
        plugins: {
          tooltip: {
            callbacks: {
              title: (items) => (items.length ? new Date(items[0].parsed.x ?? 0).toLocaleString() : ""),
              label: (i) => `${(i.parsed.y ?? 0).toFixed(1)}% used`,
            },
          },
        },
        scales: {
          x: {
            type: "linear",
            ticks: {
              maxTicksLimit: 4,
              maxRotation: 0,
              callback(v) {
                return axisTime(Number(v), Number(this.max) - Number(this.min));
              },
            },
          },
          y: { min: 0, max: 100, ticks: { maxTicksLimit: 3, callback: (v) => `${v}%` } },
        },
      },
    }),
    (c, k) => {
      const ds = c.data.datasets[0];
      ds.borderColor = k.accent;
      ds.backgroundColor = k.fill;
      for (const axis of ["x", "y"] as const) {
        const s = c.options.scales![axis]! as { grid: { color: string }; ticks: { color: string }; border: { color: string } };
        s.grid.color = k.line;
        s.border.color = k.line;
        s.ticks.color = k.muted;
      }
    },
  );
  useEffect(() => {
    const c = chart.current;
    if (!c) return;
    const data = c.data.datasets[0].data as PlotPoint[];
    const u = plotUpdate(data, points);
    if (u.kind === "same") return;
    if (u.kind === "append") {
      data.splice(0, u.drop);
      data.push(...u.add);
    } else {
      c.data.datasets[0].data = points.slice();
    }
    // The time axis spans exactly the readings (Chart.js would round it out to whole ticks).
    const x = c.options.scales!.x!;
    x.min = points.length ? points[0].x : undefined;
    x.max = points.length ? points[points.length - 1].x : undefined;
    c.update("none");
  }, [chart, points]);
  return (
    <div className="chart capacity">
      <canvas ref={canvas} role="img" {...attrs} />
    </div>
  );
}
