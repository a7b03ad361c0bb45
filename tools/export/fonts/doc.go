// Package fonts finds TrueType fonts on the system and tells which of
// them can draw which characters. export_pdf embeds the fonts it finds
// (fpdf needs TrueType outlines: .ttf, not .otf or .ttc); draw_chart uses
// them for chart text the built-in Liberation fonts cannot draw (CJK).
//
// The search looks in the standard font directories of Linux, macOS and
// Windows (DefaultDirs) for a primary font (DejaVu Sans, Liberation Sans,
// FreeSans, Noto Sans or Arial) and for fallback fonts that cover Chinese,
// Japanese and Korean (Droid Sans Fallback, Noto Sans SC, IPA Gothic,
// Nanum Gothic, Arial Unicode). On Debian, the packages fonts-dejavu-core
// and fonts-droid-fallback provide the first choices.
package fonts
