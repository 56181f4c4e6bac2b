import QRCode from "qrcode";

/**
 * The QR code of `text` as inline SVG (no script, no external image: it shows without JavaScript and
 * under a strict Content-Security-Policy). Error correction M, the customary quiet zone of 4 modules.
 */
export async function qrSvg(text: string): Promise<string> {
  const svg = await QRCode.toString(text, {
    type: "svg",
    errorCorrectionLevel: "M",
    margin: 4,
    color: { dark: "#000000", light: "#ffffff" },
  });
  // The library emits `<svg xmlns=… viewBox=…>`; the page sizes it with CSS and labels it itself.
  return svg.replace("<svg ", '<svg aria-hidden="true" focusable="false" ');
}
