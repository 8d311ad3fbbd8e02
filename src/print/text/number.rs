//! `float` and `double` as Java (JDK 19 and later) prints them with
//! `Float.toString` / `Double.toString`.
//!
//! Java picks the shortest decimal that reads back as the same value, the
//! one closest to it when several have that length — which is what Rust's
//! `{:e}` prints. One rule differs: when the shortest decimal has a single
//! digit, Java picks the closest decimal of one *or two* digits, so
//! `Double.MIN_VALUE` prints as `4.9E-324`, not `5.0E-324`. The layout is
//! plain (`0.001`, `9999999.0`) for magnitudes in [10⁻³, 10⁷) and
//! computerized scientific (`1.0E7`, `1.0E-4`) otherwise.

use std::fmt::{self, Write as _};
use std::str::FromStr;

/// Appends `x` as Java's `Double.toString(x)` prints it.
pub fn write_java_double(out: &mut String, x: f64) {
    write_java(out, x.is_nan(), x.is_sign_negative(), x.abs())
}

/// Appends `x` as Java's `Float.toString(x)` prints it.
pub fn write_java_float(out: &mut String, x: f32) {
    write_java(out, x.is_nan(), x.is_sign_negative(), x.abs())
}

/// `f32` and `f64`, for the shared algorithm.
trait JavaFloat: Copy + PartialEq + FromStr + fmt::LowerExp {
    const ZERO: Self;
    const INFINITY: Self;
    /// Digits after the point that print any value exactly (the longest
    /// expansions, of subnormals, have 105 and 767 significant digits).
    const EXACT_DIGITS: usize;
}

impl JavaFloat for f32 {
    const ZERO: Self = 0.0;
    const INFINITY: Self = f32::INFINITY;
    const EXACT_DIGITS: usize = 120;
}

impl JavaFloat for f64 {
    const ZERO: Self = 0.0;
    const INFINITY: Self = f64::INFINITY;
    const EXACT_DIGITS: usize = 780;
}

fn write_java<F: JavaFloat>(out: &mut String, nan: bool, negative: bool, magnitude: F) {
    if nan {
        out.push_str("NaN");
        return;
    }
    if negative {
        out.push('-');
    }
    if magnitude == F::INFINITY {
        out.push_str("Infinity");
    } else if magnitude == F::ZERO {
        out.push_str("0.0");
    } else {
        let decimal = Decimal::java(magnitude);
        decimal.write(out);
    }
}

/// A positive decimal `d₁.d₂…dₙ × 10^exponent`, without trailing zero digits.
struct Decimal {
    digits: DigitBuf,
    exponent: i32,
}

impl Decimal {
    /// The decimal Java chooses for the finite, positive `x`.
    fn java<F: JavaFloat>(x: F) -> Self {
        let mut shortest = DigitBuf::default();
        let _ = write!(shortest, "{x:e}");
        let shortest = Decimal::parse(shortest.as_str());
        if shortest.digits.len() > 1 {
            return shortest.break_tie_to_even(x);
        }
        // One digit: the closest decimal of one or two digits wins. The
        // correctly rounded two-digit decimal is the closest of all of them
        // (a one-digit decimal is a two-digit one ending in 0), so it wins
        // whenever it still reads back as `x`. (No tie is possible here: a
        // one-digit decimal reads back only as a value with a long exact
        // expansion, or as itself.)
        let mut two = DigitBuf::default();
        let _ = write!(two, "{x:.1e}");
        match two.as_str().parse::<F>() {
            Ok(parsed) if parsed == x => Decimal::parse(two.as_str()),
            _ => shortest,
        }
    }

    /// Rust's shortest decimal is the closest to `x` of its length, but when
    /// `x` lies exactly halfway between two of them Rust takes the upper one
    /// and Java the one whose last digit is even (`2.4414062E-4` for 2⁻¹²).
    fn break_tie_to_even<F: JavaFloat>(self, x: F) -> Self {
        let digits = self.digits.as_bytes();
        let Some(&last) = digits.last() else {
            return self;
        };
        if last % 2 == 0 {
            return self;
        }
        // Both neighbours end in an even digit; the one that also reads back
        // as `x` and has `x` at exactly the midpoint wins. Neither ends in 0
        // (a shorter decimal would then read back as `x`), so neither
        // carries.
        for neighbour_last in [last - 1, last + 1] {
            if !(b'2'..=b'8').contains(&neighbour_last) {
                continue;
            }
            let mut neighbour = Decimal {
                digits: self.digits.clone(),
                exponent: self.exponent,
            };
            neighbour.digits.bytes[digits.len() - 1] = neighbour_last;
            if !neighbour.reads_back_as(x) {
                continue;
            }
            // The midpoint: the lower of the two, followed by a 5.
            let mut midpoint = if neighbour_last < last {
                neighbour.digits.clone()
            } else {
                self.digits.clone()
            };
            midpoint.push(b'5');
            if is_exactly(x, &midpoint, self.exponent) {
                return neighbour;
            }
        }
        self
    }

    fn reads_back_as<F: JavaFloat>(&self, x: F) -> bool {
        let mut text = DigitBuf::default();
        let digits = self.digits.as_str();
        let _ = write!(text, "{}.{}e{}", &digits[..1], &digits[1..], self.exponent);
        text.as_str().parse::<F>().is_ok_and(|parsed| parsed == x)
    }

    /// Parses Rust's `LowerExp` output (`1.25e-7`, `5e-324`).
    fn parse(text: &str) -> Self {
        let (mantissa, exponent) = text.split_once('e').unwrap_or((text, "0"));
        let mut digits = DigitBuf::default();
        for byte in mantissa.bytes().filter(u8::is_ascii_digit) {
            digits.push(byte);
        }
        while digits.len() > 1 && digits.as_bytes().last() == Some(&b'0') {
            digits.len -= 1;
        }
        if digits.len() == 0 {
            // Not reached for Rust's output; keeps `write` total.
            digits.push(b'0');
        }
        Decimal {
            digits,
            exponent: exponent.parse().unwrap_or(0),
        }
    }

    fn write(&self, out: &mut String) {
        let digits = self.digits.as_str();
        let e = self.exponent;
        if (-3..7).contains(&e) {
            if e < 0 {
                // 0.00ddd
                out.push_str("0.");
                out.extend(std::iter::repeat_n('0', (-e - 1) as usize));
                out.push_str(digits);
            } else {
                let int_len = e as usize + 1;
                if digits.len() <= int_len {
                    out.push_str(digits);
                    out.extend(std::iter::repeat_n('0', int_len - digits.len()));
                    out.push_str(".0");
                } else {
                    out.push_str(&digits[..int_len]);
                    out.push('.');
                    out.push_str(&digits[int_len..]);
                }
            }
        } else {
            out.push_str(&digits[..1]);
            out.push('.');
            out.push_str(if digits.len() > 1 { &digits[1..] } else { "0" });
            out.push('E');
            let _ = write!(out, "{e}");
        }
    }
}

/// Whether `x` is exactly `d₁.d₂…dₙ × 10^exponent` (`digits`, no trailing
/// zeros). Rust prints a float's exact decimal expansion when asked for
/// enough digits; this runs only for the rare candidate ties.
fn is_exactly<F: JavaFloat>(x: F, digits: &DigitBuf, exponent: i32) -> bool {
    // Cheap test first: the expansion cut to n digits must be the digits.
    let mut cut = DigitBuf::default();
    let precision = digits.len() - 1;
    if write!(cut, "{x:.precision$e}").is_err() {
        return false;
    }
    let cut = Decimal::parse(cut.as_str());
    if cut.exponent != exponent || cut.digits.as_bytes() != digits.as_bytes() {
        return false;
    }
    let exact = format!("{x:.precision$e}", precision = F::EXACT_DIGITS);
    let exact_digits = exact
        .split_once('e')
        .map_or(&exact[..], |(mantissa, _)| mantissa);
    let exact_digits = exact_digits.replace('.', "");
    exact_digits.trim_end_matches('0').as_bytes() == digits.as_bytes()
}

/// A small stack buffer for ASCII formatting (no allocation per number).
/// Rust prints at most 17 significant digits plus sign, dot and exponent.
#[derive(Clone, Default)]
struct DigitBuf {
    bytes: [u8; 32],
    len: usize,
}

impl DigitBuf {
    fn push(&mut self, byte: u8) {
        if let Some(slot) = self.bytes.get_mut(self.len) {
            *slot = byte;
            self.len += 1;
        }
    }

    fn len(&self) -> usize {
        self.len
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn as_str(&self) -> &str {
        // Only ASCII is ever pushed.
        std::str::from_utf8(self.as_bytes()).unwrap_or("")
    }
}

impl fmt::Write for DigitBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.len + s.len() > self.bytes.len() {
            return Err(fmt::Error);
        }
        s.bytes().for_each(|b| self.push(b));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn double(x: f64) -> String {
        let mut out = String::new();
        write_java_double(&mut out, x);
        out
    }

    fn float(x: f32) -> String {
        let mut out = String::new();
        write_java_float(&mut out, x);
        out
    }

    #[test]
    fn special_values() {
        assert_eq!(double(f64::NAN), "NaN");
        assert_eq!(double(f64::from_bits(0x7FF8_0000_0000_0001)), "NaN");
        assert_eq!(double(f64::from_bits(0xFFF8_0000_0000_0000)), "NaN");
        assert_eq!(float(f32::from_bits(0x7FC0_0001)), "NaN");
        assert_eq!(double(f64::INFINITY), "Infinity");
        assert_eq!(double(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(float(f32::INFINITY), "Infinity");
        assert_eq!(float(f32::NEG_INFINITY), "-Infinity");
        assert_eq!(double(0.0), "0.0");
        assert_eq!(double(-0.0), "-0.0");
        assert_eq!(float(0.0), "0.0");
        assert_eq!(float(-0.0), "-0.0");
    }

    #[test]
    fn plain_notation_from_one_thousandth_below_ten_million() {
        assert_eq!(double(0.001), "0.001");
        assert_eq!(double(0.0015), "0.0015");
        assert_eq!(double(0.5), "0.5");
        assert_eq!(double(1.0), "1.0");
        assert_eq!(double(1.5), "1.5");
        assert_eq!(double(100.0), "100.0");
        assert_eq!(double(123456.789), "123456.789");
        assert_eq!(double(9999999.0), "9999999.0");
        assert_eq!(double(9999999.999999998), "9999999.999999998");
        assert_eq!(double(-2.5), "-2.5");
        assert_eq!(double(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(double(std::f64::consts::PI), "3.141592653589793");
        assert_eq!(float(0.001), "0.001");
        assert_eq!(float(9999999.0), "9999999.0");
        assert_eq!(float(1.1), "1.1");
        assert_eq!(float(0.1), "0.1");
        assert_eq!(float(100.0), "100.0");
    }

    #[test]
    fn scientific_notation_outside() {
        assert_eq!(double(1.0e7), "1.0E7");
        assert_eq!(double(1.0e-4), "1.0E-4");
        assert_eq!(double(0.000999), "9.99E-4");
        assert_eq!(double(1.0e10), "1.0E10");
        assert_eq!(double(1.234e10), "1.234E10");
        assert_eq!(double(1.0e300), "1.0E300");
        assert_eq!(double(-1.0e300), "-1.0E300");
        assert_eq!(double(f64::from_bits(0xFE37_E43C_8800_759C)), "-1.0E300");
        assert_eq!(double(f64::MAX), "1.7976931348623157E308");
        assert_eq!(double(f64::MIN_POSITIVE), "2.2250738585072014E-308");
        assert_eq!(double(1.0e23), "1.0E23");
        // JDK 19+ (before, `1.9999999999999998E23`).
        assert_eq!(double(2.0e23), "2.0E23");
        assert_eq!(float(1.0e7), "1.0E7");
        assert_eq!(float(1.0e10), "1.0E10");
        assert_eq!(float(16777216.0), "1.6777216E7");
        assert_eq!(float(f32::MAX), "3.4028235E38");
        assert_eq!(float(f32::from_bits(0x3A83_126F)), "0.001");
        assert_eq!(float(f32::from_bits(0x3A83_126E)), "9.999999E-4");
    }

    #[test]
    fn one_digit_shortest_takes_the_closest_of_one_or_two_digits() {
        assert_eq!(double(f64::from_bits(1)), "4.9E-324"); // Double.MIN_VALUE
        assert_eq!(double(f64::from_bits(2)), "9.9E-324");
        assert_eq!(float(f32::from_bits(1)), "1.4E-45"); // Float.MIN_VALUE
        assert_eq!(float(f32::from_bits(2)), "2.8E-45");
        // Exact one-digit values stay one digit.
        assert_eq!(double(2.0), "2.0");
        assert_eq!(double(3.0e-5), "3.0E-5");
        assert_eq!(float(8.0), "8.0");
    }

    #[test]
    fn exact_ties_between_two_shortest_decimals_go_to_the_even_digit() {
        // 2⁻¹² = 0.000244140625: 2.4414062E-4 and 2.4414063E-4 are equally close.
        assert_eq!(float(f32::from_bits(0x3980_0000)), "2.4414062E-4");
        assert_eq!(float(f32::from_bits(0x4A00_0001)), "2097152.2"); // 2097152.25
        assert_eq!(float(f32::from_bits(0x469A_8A20)), "19781.062"); // 19781.0625
        assert_eq!(
            double(f64::from_bits(0x4310_0000_0000_0001)),
            "1.1258999068426242E15"
        );
        assert_eq!(
            double(f64::from_bits(0x4310_0000_0000_0003)),
            "1.1258999068426248E15"
        );
        // Not ties: the closest wins.
        assert_eq!(
            double(f64::from_bits(0x4320_0000_0000_0001)),
            "2.2517998136852485E15"
        );
        assert_eq!(double(2.0f64.powi(-12)), "2.44140625E-4");
    }

    #[test]
    fn float_min_normal_is_shortest_not_nine_digits() {
        assert_eq!(float(f32::MIN_POSITIVE), "1.1754944E-38");
        // The literal Java documents for Float.MIN_NORMAL.
        let documented: f32 = "1.17549435E-38".parse().unwrap();
        assert_eq!(float(documented), "1.1754944E-38");
    }

    #[test]
    fn output_reads_back_as_the_same_value() {
        let mut state = 0x2545_F491_4F6C_DD1D_u64;
        for _ in 0..20_000 {
            // xorshift64*: any bit pattern, subnormals included.
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let bits = state.wrapping_mul(0x2545_F491_4F6C_DD1D);
            let d = f64::from_bits(bits);
            if d.is_finite() {
                let text = double(d);
                assert_eq!(text.parse::<f64>().unwrap().to_bits(), bits, "{text}");
            }
            let f = f32::from_bits(bits as u32);
            if f.is_finite() {
                let text = float(f);
                assert_eq!(
                    text.parse::<f32>().unwrap().to_bits(),
                    bits as u32,
                    "{text}"
                );
            }
        }
    }
}
