//! A tensor expression as text, for `kernlab compile --expr` and a user's own ops:
//! `x * sigmoid(1.702 * x)`, `silu(a) * b`, `x - logsumexp(x)`.
//!
//! - numbers (`0.5`, `1e-6`, `inf`, `nan`, `pi`), inputs (any other name; a full
//!   `rows × cols` tensor unless declared otherwise), parentheses;
//! - `+ - * /`, unary `-`, integer powers `x^3` (also `x^-1`), comparisons `< <= > >= ==`
//!   (1 where true, else 0);
//! - functions of one value: `exp log tanh erf sqrt rsqrt sigmoid silu relu abs`, casts
//!   `f32 bf16 f16` (rounding to that format);
//! - of two or three: `max(a, b)`, `min(a, b)`, `where(c, a, b)` (a where c ≠ 0, else b);
//! - row reductions over the last dimension, broadcast back where combined with a full value:
//!   `sum(x)`, `mean(x)`, `amax(x)` (also `max(x)`), `logsumexp(x)`;
//! - `matmul(x, w)`: x `[rows, K]` times w `[cols, K]` transposed (two inputs read by nothing
//!   else), compiled as a GEMM whose epilogue is the rest: `gelu(matmul(x, w) + b)`.

use super::graph::{Expr, Graph, Layout};
use crate::runtime::dtype::DType;
use crate::runtime::error::{Error, Result};

/// Parse `text` into `g`, declaring each input it names with the layout `layouts` gives it
/// (a full tensor otherwise).
pub fn parse<'g>(g: &'g Graph, text: &str, layouts: &[(String, Layout)]) -> Result<Expr<'g>> {
    let mut p = Parser {
        g,
        text,
        toks: lex(text)?,
        at: 0,
        layouts,
    };
    let e = p.expr()?;
    if p.at < p.toks.len() {
        return Err(p.error("an operator or the end of the expression"));
    }
    Ok(e)
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Name(String),
    Op(&'static str),
}

/// Tokens with the byte offset each starts at.
fn lex(text: &str) -> Result<Vec<(Tok, usize)>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == '.' && b.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                let mut j = i + 1;
                if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
                    j += 1;
                }
                if j < b.len() && b[j].is_ascii_digit() {
                    i = j;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let s = &text[start..i];
            let v = s
                .parse::<f64>()
                .map_err(|_| Error::Invalid(format!("expression: bad number '{s}' at {start}")))?;
            out.push((Tok::Num(v), start));
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Name(text[start..i].to_string()), start));
            continue;
        }
        let two = text.get(i..i + 2).unwrap_or("");
        let op: &'static str = match two {
            "<=" => "<=",
            ">=" => ">=",
            "==" => "==",
            _ => match c {
                '+' => "+",
                '-' => "-",
                '*' => "*",
                '/' => "/",
                '^' => "^",
                '(' => "(",
                ')' => ")",
                ',' => ",",
                '<' => "<",
                '>' => ">",
                _ => {
                    return Err(Error::Invalid(format!(
                        "expression: unexpected '{c}' at {start} in `{text}`"
                    )))
                }
            },
        };
        i += op.len();
        out.push((Tok::Op(op), start));
    }
    Ok(out)
}

struct Parser<'g, 't> {
    g: &'g Graph,
    text: &'t str,
    toks: Vec<(Tok, usize)>,
    at: usize,
    layouts: &'t [(String, Layout)],
}

impl<'g> Parser<'g, '_> {
    fn error(&self, wanted: &str) -> Error {
        let (pos, got) = match self.toks.get(self.at) {
            Some((t, p)) => (
                *p,
                match t {
                    Tok::Num(v) => format!("the number {v}"),
                    Tok::Name(n) => format!("'{n}'"),
                    Tok::Op(o) => format!("'{o}'"),
                },
            ),
            None => (self.text.len(), "the end".to_string()),
        };
        Error::Invalid(format!(
            "expression: expected {wanted} at {pos}, found {got}: `{}` ← here `{}`",
            &self.text[..pos],
            &self.text[pos..]
        ))
    }

    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.toks.get(self.at), Some((Tok::Op(o), _)) if *o == op) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, op: &str) -> Result<()> {
        if self.eat(op) {
            Ok(())
        } else {
            Err(self.error(&format!("'{op}'")))
        }
    }

    fn expr(&mut self) -> Result<Expr<'g>> {
        let a = self.sum()?;
        for (op, f) in [
            ("<=", Expr::le as fn(Expr<'g>, Expr<'g>) -> Expr<'g>),
            (">=", Expr::ge),
            ("==", Expr::eq),
            ("<", Expr::lt),
            (">", Expr::gt),
        ] {
            if self.eat(op) {
                let b = self.sum()?;
                return Ok(f(a, b));
            }
        }
        Ok(a)
    }

    fn sum(&mut self) -> Result<Expr<'g>> {
        let mut a = self.product()?;
        loop {
            if self.eat("+") {
                a = a + self.product()?;
            } else if self.eat("-") {
                a = a - self.product()?;
            } else {
                return Ok(a);
            }
        }
    }

    fn product(&mut self) -> Result<Expr<'g>> {
        let mut a = self.unary()?;
        loop {
            if self.eat("*") {
                a = a * self.unary()?;
            } else if self.eat("/") {
                a = a / self.unary()?;
            } else {
                return Ok(a);
            }
        }
    }

    fn unary(&mut self) -> Result<Expr<'g>> {
        if self.eat("-") {
            return Ok(-self.unary()?);
        }
        self.power()
    }

    fn power(&mut self) -> Result<Expr<'g>> {
        let a = self.atom()?;
        if !self.eat("^") {
            return Ok(a);
        }
        let neg = self.eat("-");
        match self.toks.get(self.at) {
            Some((Tok::Num(v), _)) if v.fract() == 0.0 && v.abs() <= 64.0 => {
                let n = *v as i32;
                self.at += 1;
                Ok(a.powi(if neg { -n } else { n }))
            }
            _ => Err(self.error("an integer power from -64 to 64")),
        }
    }

    fn args(&mut self, name: &str, n: usize) -> Result<Vec<Expr<'g>>> {
        self.expect("(")?;
        let mut v = vec![self.expr()?];
        while self.eat(",") {
            v.push(self.expr()?);
        }
        self.expect(")")?;
        if v.len() != n {
            return Err(Error::Invalid(format!(
                "expression: {name} takes {n} argument(s), got {}",
                v.len()
            )));
        }
        Ok(v)
    }

    fn atom(&mut self) -> Result<Expr<'g>> {
        let Some((tok, _)) = self.toks.get(self.at).cloned() else {
            return Err(self.error("a value"));
        };
        let g = self.g;
        match tok {
            Tok::Num(v) => {
                self.at += 1;
                Ok(g.constant(v))
            }
            Tok::Op("(") => {
                self.at += 1;
                let e = self.expr()?;
                self.expect(")")?;
                Ok(e)
            }
            Tok::Op(_) => Err(self.error("a value")),
            Tok::Name(name) => {
                self.at += 1;
                let called = matches!(self.toks.get(self.at), Some((Tok::Op("("), _)));
                if !called {
                    return match name.as_str() {
                        "pi" => Ok(g.constant(std::f64::consts::PI)),
                        "inf" => Ok(g.constant(f64::INFINITY)),
                        "nan" => Ok(g.constant(f64::NAN)),
                        _ => {
                            let layout = self
                                .layouts
                                .iter()
                                .find(|(n, _)| *n == name)
                                .map_or(Layout::Full, |(_, l)| *l);
                            g.input(&name, layout)
                        }
                    };
                }
                let one = |p: &mut Self| p.args(&name, 1).map(|v| v[0]);
                Ok(match name.as_str() {
                    "exp" => one(self)?.exp(),
                    "log" => one(self)?.log(),
                    "tanh" => one(self)?.tanh(),
                    "erf" => one(self)?.erf(),
                    "sqrt" => one(self)?.sqrt(),
                    "rsqrt" => one(self)?.rsqrt(),
                    "sigmoid" => 1.0 / (1.0 + (-one(self)?).exp()),
                    "silu" => {
                        let x = one(self)?;
                        x / (1.0 + (-x).exp())
                    }
                    "relu" => one(self)?.max(g.constant(0.0)),
                    "abs" => {
                        let x = one(self)?;
                        x.max(-x)
                    }
                    "f32" => one(self)?.cast(DType::F32),
                    "bf16" => one(self)?.cast(DType::BF16),
                    "f16" => one(self)?.cast(DType::F16),
                    "sum" => one(self)?.sum(),
                    "mean" => one(self)?.mean(),
                    "amax" => one(self)?.row_max(),
                    "logsumexp" => {
                        let x = one(self)?;
                        let m = x.row_max();
                        m + (x - m).exp().sum().log()
                    }
                    "max" | "min" => {
                        self.expect("(")?;
                        let a = self.expr()?;
                        let b = if self.eat(",") {
                            Some(self.expr()?)
                        } else {
                            None
                        };
                        self.expect(")")?;
                        match (name.as_str(), b) {
                            ("max", None) => a.row_max(),
                            ("max", Some(b)) => a.max(b),
                            ("min", Some(b)) => a.min(b),
                            _ => return Err(Error::Invalid(
                                "expression: min takes two arguments (a row minimum is -amax(-x))"
                                    .into(),
                            )),
                        }
                    }
                    "where" => {
                        let v = self.args(&name, 3)?;
                        g.select(v[0], v[1], v[2])
                    }
                    "matmul" => {
                        let v = self.args(&name, 2)?;
                        v[0].matmul(v[1])
                    }
                    _ => {
                        return Err(Error::Invalid(format!(
                            "expression: unknown function '{name}' (exp log tanh erf sqrt rsqrt \
                             sigmoid silu relu abs f32 bf16 f16 max min where sum mean amax \
                             logsumexp matmul)"
                        )))
                    }
                })
            }
        }
    }
}

/// An input's declared layout from `NAME:LAYOUT` (`full`, `row`, `col` or `scalar`).
pub fn input_layout(spec: &str) -> Result<(String, Layout)> {
    let (name, l) = spec.split_once(':').ok_or_else(|| {
        Error::Invalid(format!(
            "input '{spec}': write NAME:LAYOUT, LAYOUT one of full, row, col, scalar"
        ))
    })?;
    let layout = match l.trim() {
        "full" => Layout::Full,
        "row" => Layout::Row,
        "col" => Layout::Col,
        "scalar" => Layout::Scalar,
        other => {
            return Err(Error::Invalid(format!(
                "input '{name}': layout '{other}' (full: rows × cols, row: a value a row, col: a \
                 value a column, scalar: one value)"
            )))
        }
    };
    Ok((name.trim().to_string(), layout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn eval(text: &str, inputs: &[(&str, Vec<f64>)], rows: usize, cols: usize) -> Vec<f64> {
        let g = Graph::new();
        let layouts = [("w".to_string(), Layout::Col)];
        let y = parse(&g, text, &layouts).unwrap();
        let m: HashMap<String, Vec<f64>> = inputs
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect();
        g.eval(y.id, &m, rows, cols, DType::F32).unwrap()
    }

    #[test]
    fn precedence_powers_and_unary_minus_read_as_in_python() {
        let x = vec![2.0];
        assert_eq!(eval("1 + 2 * x^3", &[("x", x.clone())], 1, 1), [17.0]);
        assert_eq!(eval("-x^2", &[("x", x.clone())], 1, 1), [-4.0]);
        assert_eq!(eval("(1 + x) / x^-1", &[("x", x.clone())], 1, 1), [6.0]);
        assert_eq!(eval("x > 1", &[("x", x.clone())], 1, 1), [1.0]);
        assert_eq!(
            eval("where(x <= 1, 5, x * pi)", &[("x", x)], 1, 1)[0],
            2.0 * std::f64::consts::PI
        );
    }

    #[test]
    fn the_issue_examples_parse_and_mean_what_they_say() {
        let a = vec![-1.0, 0.5];
        let b = vec![3.0, 2.0];
        let got = eval("silu(a) * b", &[("a", a.clone()), ("b", b.clone())], 1, 2);
        for i in 0..2 {
            let want = a[i] / (1.0 + (-a[i]).exp()) * b[i];
            assert!((got[i] - want).abs() < 1e-15);
        }
        let x = vec![1.0, 2.0, 3.0];
        let got = eval("x - logsumexp(x)", &[("x", x.clone())], 1, 3);
        let lse = x.iter().map(|v| v.exp()).sum::<f64>().ln();
        for i in 0..3 {
            assert!((got[i] - (x[i] - lse)).abs() < 1e-12);
        }
        // A declared column vector broadcasts along each row.
        let got = eval(
            "x * w",
            &[("x", vec![1.0, 2.0, 3.0, 4.0]), ("w", vec![10.0, 100.0])],
            2,
            2,
        );
        assert_eq!(got, [10.0, 200.0, 30.0, 400.0]);
        assert_eq!(eval("max(x) + mean(x)", &[("x", x)], 1, 3), [5.0]);
    }

    #[test]
    fn the_eager_operation_counts_are_the_expressions_own() {
        for (text, ops) in [
            ("silu(a) * b", 5),
            ("x * sigmoid(1.702 * x)", 6),
            ("x - logsumexp(x)", 7),
        ] {
            let g = Graph::new();
            parse(&g, text, &[]).unwrap();
            assert_eq!(g.operations(), ops, "{text}:\n{g}");
        }
    }

    #[test]
    fn mistakes_are_named_with_where_they_are() {
        let g = Graph::new();
        for (text, says) in [
            ("x +", "expected a value at 3"),
            ("x * (1 + x", "expected ')'"),
            ("foo(x)", "unknown function 'foo'"),
            ("x ^ 0.5", "an integer power"),
            ("x $ 2", "unexpected '$'"),
            ("exp(x, x)", "exp takes 1 argument(s), got 2"),
            ("x x", "an operator or the end"),
            ("min(x)", "min takes two"),
        ] {
            let e = parse(&g, text, &[]).map(|_| ()).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
        assert_eq!(
            input_layout("w:col").unwrap(),
            ("w".to_string(), Layout::Col)
        );
        assert!(input_layout("w").is_err());
        assert!(input_layout("w:diag")
            .unwrap_err()
            .to_string()
            .contains("layout 'diag'"));
    }
}
