"""A monthly budget (a cluster's or a team's): what a person sets, and what the read
answers."""

from __future__ import annotations

from marshmallow import Schema, fields, validate

from vocabulary.budgets import BUDGET_STATES, MAX_MONTHLY_USD, MIN_MONTHLY_USD


class BudgetSetSchema(Schema):
    monthly_usd = fields.Float(
        required=True, validate=validate.Range(min=MIN_MONTHLY_USD, max=MAX_MONTHLY_USD),
        metadata={"description": "US dollars per calendar month (UTC)"})


class BudgetWarningSchema(Schema):
    at = fields.Float(required=True, metadata={
        "description": "the fraction of the budget crossed: one of warn_at"})
    raised_at = fields.String(required=True, metadata={"description": "when hypd saw it"})


class BudgetSchema(Schema):
    """A cluster's or a team's budget against what it has cost this month (the cluster's: a
    lower bound, as the cost read's `month`; a team's: its `month` in the cost read's
    `teams`)."""

    cluster = fields.String(required=True)
    team = fields.String(required=True, allow_none=True, metadata={
        "description": "a team's budget: the team; null: the cluster's"})
    monthly_usd = fields.Float(required=True, allow_none=True, metadata={
        "description": "null: no budget"})
    month_start = fields.String(required=True)
    spent_usd = fields.Float(required=True, metadata={
        "description": "this month so far, at least (items without a price are left out)"})
    complete = fields.Boolean(required=True, metadata={
        "description": "every item of the cost had a price"})
    fraction = fields.Float(required=True, allow_none=True, metadata={
        "description": "spent_usd / monthly_usd; null: no budget"})
    state = fields.String(required=True, validate=validate.OneOf(BUDGET_STATES))
    warn_at = fields.List(fields.Float(), required=True, metadata={
        "description": "fractions at which a warning is raised, once each per month"})
    warnings = fields.List(fields.Nested(BudgetWarningSchema), required=True, metadata={
        "description": "raised this month (each also in the audit log and the "
                       "hypd_budget_warnings_total metric)"})
    set_by = fields.String(required=True, allow_none=True)
    set_at = fields.String(required=True, allow_none=True)
    as_of = fields.String(required=True)
