use std::collections::BTreeMap;

use jiff::civil::Date;
use rust_decimal::Decimal;
use serde::Serialize;

use crate::money::{Currency, Money, MoneyError};

/// One dated exchange rate: one unit of `currency` buys `usd_per_unit` US dollars.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FxRate {
    /// The currency this rate prices.
    pub currency: Currency,
    /// US dollars per one unit of `currency`.
    pub usd_per_unit: Decimal,
    /// Date of the rate.
    pub as_of: Date,
    /// Where the rate comes from.
    pub source: String,
}

/// A conversion that has no rate.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FxError {
    /// No rate is known for the currency.
    #[error("no exchange rate for {0}; add one to the catalog's `fx.csv`")]
    NoRate(Currency),
    /// The conversion overflowed.
    #[error(transparent)]
    Money(#[from] MoneyError),
}

/// Exchange rates, all quoted against USD so that any pair converts through one table.
#[derive(Debug, Clone, Default)]
pub struct FxTable {
    rates: BTreeMap<Currency, FxRate>,
}

impl FxTable {
    /// A table with only USD (rate 1).
    pub fn usd_only() -> Self {
        let mut t = FxTable::default();
        t.insert(FxRate {
            currency: Currency::USD,
            usd_per_unit: Decimal::ONE,
            as_of: Date::constant(2000, 1, 1),
            source: "identity".into(),
        });
        t
    }

    /// Adds a rate, keeping the newer one when a currency is given twice.
    pub fn insert(&mut self, rate: FxRate) {
        match self.rates.get(&rate.currency) {
            Some(existing) if existing.as_of > rate.as_of => {}
            _ => {
                self.rates.insert(rate.currency, rate);
            }
        }
    }

    /// The rate for `currency`, if known.
    pub fn rate(&self, currency: Currency) -> Option<&FxRate> {
        self.rates.get(&currency)
    }

    /// All rates.
    pub fn rates(&self) -> impl Iterator<Item = &FxRate> {
        self.rates.values()
    }

    /// How many units of `to` one unit of `from` buys.
    pub fn factor(&self, from: Currency, to: Currency) -> Result<Decimal, FxError> {
        if from == to {
            return Ok(Decimal::ONE);
        }
        let f = self.rate(from).ok_or(FxError::NoRate(from))?;
        let t = self.rate(to).ok_or(FxError::NoRate(to))?;
        f.usd_per_unit.checked_div(t.usd_per_unit).ok_or(FxError::Money(MoneyError::Overflow))
    }

    /// `money` expressed in `to`.
    pub fn convert(&self, money: Money, to: Currency) -> Result<Money, FxError> {
        let factor = self.factor(money.currency, to)?;
        let amount = money.amount.checked_mul(factor).ok_or(MoneyError::Overflow)?;
        Ok(Money::new(amount, to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::str::FromStr;

    fn table() -> FxTable {
        let mut t = FxTable::usd_only();
        t.insert(FxRate {
            currency: Currency::CNY,
            usd_per_unit: Decimal::from_str("0.14").unwrap(),
            as_of: Date::constant(2026, 1, 1),
            source: "test".into(),
        });
        t
    }

    #[test]
    fn converts_both_ways() {
        let t = table();
        let cny = Money::new(Decimal::from(100), Currency::CNY);
        let usd = t.convert(cny, Currency::USD).unwrap();
        assert_eq!(usd, Money::new(Decimal::from(14), Currency::USD));
        let back = t.convert(usd, Currency::CNY).unwrap();
        assert_eq!(back.round_dp(10), cny);
    }

    #[test]
    fn keeps_newest_rate() {
        let mut t = table();
        t.insert(FxRate {
            currency: Currency::CNY,
            usd_per_unit: Decimal::from_str("0.2").unwrap(),
            as_of: Date::constant(2020, 1, 1),
            source: "old".into(),
        });
        assert_eq!(t.rate(Currency::CNY).unwrap().source, "test");
    }

    #[test]
    fn unknown_currency_is_an_error() {
        let eur = Money::new(Decimal::ONE, Currency::EUR);
        assert_eq!(table().convert(eur, Currency::USD), Err(FxError::NoRate(Currency::EUR)));
    }
}
