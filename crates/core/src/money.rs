use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// An ISO 4217 currency code (three ASCII upper-case letters), stored inline.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Currency([u8; 3]);

/// A currency code that is not three ASCII letters.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid currency code `{0}`: expected three letters such as `USD` or `CNY`")]
pub struct CurrencyError(pub String);

impl Currency {
    /// US dollar.
    pub const USD: Currency = Currency(*b"USD");
    /// Chinese yuan renminbi.
    pub const CNY: Currency = Currency(*b"CNY");
    /// Euro.
    pub const EUR: Currency = Currency(*b"EUR");

    /// The code as a string slice.
    pub fn as_str(&self) -> &str {
        // Construction only admits ASCII letters, so this cannot fail.
        std::str::from_utf8(&self.0).unwrap_or("???")
    }

    /// The symbol used in tables: `$`, `¥`, `€`, or the code followed by a space.
    pub fn symbol(&self) -> &str {
        match &self.0 {
            b"USD" => "$",
            b"CNY" => "¥",
            b"EUR" => "€",
            _ => self.as_str(),
        }
    }
}

impl FromStr for Currency {
    type Err = CurrencyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let bytes = t.as_bytes();
        if bytes.len() != 3 || !bytes.iter().all(u8::is_ascii_alphabetic) {
            return Err(CurrencyError(s.to_string()));
        }
        let mut code = [0u8; 3];
        for (slot, b) in code.iter_mut().zip(bytes) {
            *slot = b.to_ascii_uppercase();
        }
        // Common aliases users type for the yuan.
        Ok(Currency(code))
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Currency({})", self.as_str())
    }
}

impl Serialize for Currency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Currency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// An exact amount of money in one currency.
///
/// Arithmetic between two amounts checks that the currencies agree; converting between
/// currencies goes through [`crate::FxTable`] so that the rate used is always explicit.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Money {
    /// The exact amount.
    pub amount: Decimal,
    /// Its currency.
    pub currency: Currency,
}

/// Money arithmetic that would mix currencies or overflow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MoneyError {
    /// Two amounts in different currencies were combined without conversion.
    #[error("cannot combine {left} with {right} without an exchange rate")]
    CurrencyMismatch {
        /// Currency of the left operand.
        left: Currency,
        /// Currency of the right operand.
        right: Currency,
    },
    /// The result does not fit in 28 significant digits.
    #[error("money amount overflowed")]
    Overflow,
    /// A money string such as `800 USD` could not be parsed.
    #[error("invalid amount `{0}`: expected a number and a currency, such as `800 USD`")]
    Parse(String),
}

impl Money {
    /// `amount` in `currency`.
    pub fn new(amount: Decimal, currency: Currency) -> Self {
        Money { amount, currency }
    }

    /// Zero in `currency`.
    pub fn zero(currency: Currency) -> Self {
        Money { amount: Decimal::ZERO, currency }
    }

    /// Sum of two amounts in the same currency.
    pub fn checked_add(self, other: Money) -> Result<Money, MoneyError> {
        if self.currency != other.currency {
            return Err(MoneyError::CurrencyMismatch { left: self.currency, right: other.currency });
        }
        let amount = self.amount.checked_add(other.amount).ok_or(MoneyError::Overflow)?;
        Ok(Money { amount, currency: self.currency })
    }

    /// Difference of two amounts in the same currency.
    pub fn checked_sub(self, other: Money) -> Result<Money, MoneyError> {
        if self.currency != other.currency {
            return Err(MoneyError::CurrencyMismatch { left: self.currency, right: other.currency });
        }
        let amount = self.amount.checked_sub(other.amount).ok_or(MoneyError::Overflow)?;
        Ok(Money { amount, currency: self.currency })
    }

    /// The amount multiplied by an exact factor (a quantity, a share, a discount).
    pub fn checked_mul(self, factor: Decimal) -> Result<Money, MoneyError> {
        let amount = self.amount.checked_mul(factor).ok_or(MoneyError::Overflow)?;
        Ok(Money { amount, currency: self.currency })
    }

    /// The amount divided by an exact, non-zero divisor.
    pub fn checked_div(self, divisor: Decimal) -> Result<Money, MoneyError> {
        let amount = self.amount.checked_div(divisor).ok_or(MoneyError::Overflow)?;
        Ok(Money { amount, currency: self.currency })
    }

    /// Sum of amounts, all in `currency`.
    pub fn sum<I: IntoIterator<Item = Money>>(currency: Currency, items: I) -> Result<Money, MoneyError> {
        items.into_iter().try_fold(Money::zero(currency), Money::checked_add)
    }

    /// Rounded to `dp` decimal places, half away from zero (how providers round invoice lines).
    pub fn round_dp(self, dp: u32) -> Money {
        Money {
            amount: self.amount.round_dp_with_strategy(dp, rust_decimal::RoundingStrategy::MidpointAwayFromZero),
            currency: self.currency,
        }
    }

    /// Whether the amount is zero.
    pub fn is_zero(&self) -> bool {
        self.amount.is_zero()
    }
}

impl FromStr for Money {
    type Err = MoneyError;
    /// Parses `800 USD`, `800USD`, `USD 800`, `¥35.5`, `$12`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let err = || MoneyError::Parse(s.to_string());
        let (symbol_currency, rest) = if let Some(r) = t.strip_prefix('$') {
            (Some(Currency::USD), r)
        } else if let Some(r) = t.strip_prefix('¥').or_else(|| t.strip_prefix('￥')) {
            (Some(Currency::CNY), r)
        } else if let Some(r) = t.strip_prefix('€') {
            (Some(Currency::EUR), r)
        } else {
            (None, t)
        };
        if let Some(currency) = symbol_currency {
            let amount = Decimal::from_str(rest.trim()).map_err(|_| err())?;
            return Ok(Money { amount, currency });
        }
        let split = rest.find(|c: char| c.is_ascii_alphabetic()).ok_or_else(err)?;
        let (a, b) = rest.split_at(split);
        let (num, code) = if a.trim().is_empty() {
            // `USD 800`
            let code_end = b.find(|c: char| !c.is_ascii_alphabetic()).unwrap_or(b.len());
            (b[code_end..].trim(), &b[..code_end])
        } else {
            (a.trim(), b.trim())
        };
        let code = match code.to_ascii_uppercase().as_str() {
            "RMB" | "YUAN" => "CNY".to_string(),
            other => other.to_string(),
        };
        let currency = Currency::from_str(&code).map_err(|_| err())?;
        let amount = Decimal::from_str(num).map_err(|_| err())?;
        Ok(Money { amount, currency })
    }
}

impl fmt::Display for Money {
    /// `12.34 USD`; the precision given (`{:.2}`) rounds for display only.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match f.precision() {
            Some(p) => write!(f, "{} {}", self.amount.round_dp(p as u32), self.currency),
            None => write!(f, "{} {}", self.amount.normalize(), self.currency),
        }
    }
}

impl fmt::Debug for Money {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Money({} {})", self.amount, self.currency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn usd(s: &str) -> Money {
        Money::new(Decimal::from_str(s).unwrap(), Currency::USD)
    }

    #[test]
    fn parses_money_forms() {
        assert_eq!(Money::from_str("800 USD").unwrap(), usd("800"));
        assert_eq!(Money::from_str("800usd").unwrap(), usd("800"));
        assert_eq!(Money::from_str("USD 800.5").unwrap(), usd("800.5"));
        assert_eq!(Money::from_str("$12").unwrap(), usd("12"));
        let cny = Money::from_str("35.5 RMB").unwrap();
        assert_eq!(cny.currency, Currency::CNY);
        assert_eq!(Money::from_str("¥7").unwrap().currency, Currency::CNY);
        assert!(Money::from_str("eight hundred").is_err());
        assert!(Money::from_str("800").is_err());
    }

    #[test]
    fn refuses_to_mix_currencies() {
        let cny = Money::new(Decimal::ONE, Currency::CNY);
        assert!(matches!(usd("1").checked_add(cny), Err(MoneyError::CurrencyMismatch { .. })));
    }

    #[test]
    fn keeps_eleven_decimal_places() {
        // A real FOCUS row: 0.00000012345 USD per unit, times 3 units.
        let unit = usd("0.00000012345");
        assert_eq!(unit.checked_mul(Decimal::from(3)).unwrap(), usd("0.00000037035"));
    }

    fn small_money() -> impl Strategy<Value = Money> {
        (-10_i64.pow(12)..10_i64.pow(12), 0u32..11)
            .prop_map(|(n, scale)| Money::new(Decimal::new(n, scale), Currency::USD))
    }

    proptest! {
        #[test]
        fn addition_is_exact_and_associative(a in small_money(), b in small_money(), c in small_money()) {
            let left = a.checked_add(b).unwrap().checked_add(c).unwrap();
            let right = a.checked_add(b.checked_add(c).unwrap()).unwrap();
            prop_assert_eq!(left, right);
            prop_assert_eq!(left.checked_sub(c).unwrap().checked_sub(b).unwrap(), a);
        }

        #[test]
        fn splitting_and_summing_loses_nothing(total in small_money(), parts in 1u32..50) {
            // Split into `parts` shares, the last taking the remainder: the shares sum back exactly.
            let share = total.checked_div(Decimal::from(parts)).unwrap().round_dp(6);
            let mut shares = vec![share; (parts - 1) as usize];
            let allocated = Money::sum(Currency::USD, shares.iter().copied()).unwrap();
            shares.push(total.checked_sub(allocated).unwrap());
            prop_assert_eq!(Money::sum(Currency::USD, shares).unwrap(), total);
        }

        #[test]
        fn display_round_trips(m in small_money()) {
            let shown = m.to_string();
            prop_assert_eq!(Money::from_str(&shown).unwrap(), m);
        }
    }
}
