//! Charts of demand against commitment levels: a line of block characters for the terminal,
//! an SVG document for `--plot`.

/// Daily mean demand as a bar chart, with the commitment level marked.
pub(super) fn chart(hourly: &[f64], commit: f64) -> String {
    let days: Vec<f64> = hourly.chunks(24).map(|d| d.iter().sum::<f64>() / d.len() as f64).collect();
    let peak = days.iter().copied().fold(commit, f64::max).max(1e-9);
    let bars = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let line: String = days.iter().map(|v| bars[((v / peak) * 7.0).round().clamp(0.0, 7.0) as usize]).collect();
    let level = bars[((commit / peak) * 7.0).round().clamp(0.0, 7.0) as usize];
    let shown: String = line.chars().rev().take(90).collect::<Vec<_>>().into_iter().rev().collect();
    format!(
        "daily mean demand (last {} days, peak {:.1} GPUs): {shown}\ncommitted level: {level} ({commit:.1} GPUs)",
        days.len().min(90),
        peak
    )
}

/// One chart panel: title, hourly demand, (instrument, GPUs committed) levels.
pub(super) type Panel<'a> = (String, &'a [f64], Vec<(String, f64)>);

/// Hourly demand and the stacked commitment levels, one panel per GPU type, as an SVG document.
pub(super) fn svg_chart(panels: &[Panel]) -> String {
    use std::fmt::Write as _;
    const W: f64 = 960.0;
    const H: f64 = 260.0;
    const LEFT: f64 = 56.0;
    const TOP: f64 = 30.0;
    const PLOT_W: f64 = W - LEFT - 20.0;
    const PLOT_H: f64 = H - TOP - 40.0;
    let colours = ["#d62728", "#2ca02c", "#9467bd", "#ff7f0e"];
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n",
        H * panels.len() as f64
    );
    for (i, (title, hourly, levels)) in panels.iter().enumerate() {
        let y0 = H * i as f64;
        let total: f64 = levels.iter().map(|l| l.1).sum();
        let peak = hourly.iter().copied().fold(total, f64::max).max(1.0);
        let x = |h: usize| LEFT + PLOT_W * h as f64 / hourly.len().max(1) as f64;
        let y = |v: f64| y0 + TOP + PLOT_H * (1.0 - v / peak);
        let _ =
            writeln!(svg, "<text x=\"{LEFT}\" y=\"{}\" font-weight=\"bold\">{}</text>", y0 + 18.0, xml_escape(title));
        let _ = writeln!(
            svg,
            "<rect x=\"{LEFT}\" y=\"{}\" width=\"{PLOT_W}\" height=\"{PLOT_H}\" fill=\"none\" stroke=\"#999\"/>",
            y0 + TOP
        );
        for tick in 0..=4 {
            let v = peak * f64::from(tick) / 4.0;
            let _ =
                writeln!(svg, "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{v:.1}</text>", LEFT - 6.0, y(v) + 4.0);
        }
        let points: Vec<String> = hourly.iter().enumerate().map(|(h, v)| format!("{:.1},{:.1}", x(h), y(*v))).collect();
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"0.8\" points=\"{}\"/>",
            points.join(" ")
        );
        let mut stacked = 0.0;
        for (k, (name, gpus)) in levels.iter().enumerate() {
            stacked += gpus;
            let colour = colours[k % colours.len()];
            let _ = writeln!(
                svg,
                "<line x1=\"{LEFT}\" x2=\"{0}\" y1=\"{1:.1}\" y2=\"{1:.1}\" stroke=\"{colour}\" stroke-width=\"2\" stroke-dasharray=\"6 3\"/>",
                LEFT + PLOT_W,
                y(stacked)
            );
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{:.1}\" fill=\"{colour}\" text-anchor=\"end\">{} {gpus:.1} GPUs</text>",
                LEFT + PLOT_W - 4.0,
                y(stacked) - 4.0,
                xml_escape(name)
            );
        }
        let _ = writeln!(
            svg,
            "<text x=\"{LEFT}\" y=\"{}\">hourly GPUs in use ({} h, blue); dashed: cumulative commitment levels</text>",
            y0 + TOP + PLOT_H + 24.0,
            hourly.len()
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn xml_escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
