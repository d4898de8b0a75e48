"""Bots for Arschloch, all behind one protocol (see :mod:`agents.base`)."""

from agents.base import Agent, AgentSpecError, agent_label, make_agent, resolve_agents
from agents.expert import ExpertAgent
from agents.greedy import GreedyAgent
from agents.mc import MCAgent
from agents.random_agent import RandomAgent

__all__ = ["Agent", "AgentSpecError", "ExpertAgent", "GreedyAgent", "MCAgent", "RandomAgent",
           "agent_label", "make_agent", "resolve_agents"]
